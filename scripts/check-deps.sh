#!/usr/bin/env bash
# The domain packages (access, events, state, workspace, tools, checkpoints, agent) never
# import a transport: not rpc, server, cli, daemon or the generated
# protobuf, not gRPC, protobuf or JSON-RPC. Transports convert at the edge
# (DESIGN.md, "Layout"). Fails naming each package and what it pulls in.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
pkgs=$(go list ./access/... ./events/... ./state/... ./workspace/... ./tools/... ./checkpoints/... $(ls -d agent 2>/dev/null | sed 's#$#/...#; s#^#./#'))
transports="^($mod/(rpc|server|cli|daemon|proto)(/|\$)|google\.golang\.org/grpc(/|\$)|google\.golang\.org/protobuf(/|\$)|go\.lsp\.dev/)"
bad=0
for pkg in $pkgs; do
	if deps=$(go list -deps "$pkg" | grep -E "$transports"); then
		echo "$pkg imports transports, which belong at the edge:"
		printf '  %s\n' $deps
		bad=1
	fi
done
[ "$bad" = 0 ] && echo "domain packages import no transport ($(echo "$pkgs" | wc -w) packages)"

# No upward arrow into the agent: the tools (the McpHub's sampling among
# them) and the LLM adapters sit below it, and llm is a leaf that both the
# agent and tools/mcp import.
for pkg in $(go list ./tools/... ./llm/...); do
	if deps=$(go list -deps "$pkg" | grep -E "^$mod/agent(/|\$)"); then
		echo "$pkg imports the agent, which sits above it:"
		printf '  %s\n' $deps
		bad=1
	fi
done
if deps=$(go list -deps ./llm | grep -E "^$mod/" | grep -v -E "^$mod/(llm|internal)(/|\$)"); then
	echo "llm is a leaf (the agent and tools/mcp import it), but it imports:"
	printf '  %s\n' $deps
	bad=1
fi
[ "$bad" = 0 ] && echo "nothing below the agent imports it; llm is a leaf"
exit "$bad"
