#!/usr/bin/env bash
# Runs the editor protocol tests: integration/editor/*.test.mjs drive the
# real nexusd --stdio over vscode-jsonrpc, the library VS Code extensions
# use. Installs vscode-jsonrpc, pinned by integration/editor/package-lock.json,
# into .cache/editor-tests with npm ci, builds nexusd beside it, installs the
# MCP servers of scripts/mcp-servers.sh, and runs node --test. Needs node 20+ and npm (Debian: apt-get install nodejs npm);
# installs them with apt-get when they are missing and we are root.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/npm.sh
need_npm editor-tests
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
	echo "editor-tests: node 20 or later is needed; found $(node --version)" >&2
	exit 1
fi
dest=.cache/editor-tests
src=integration/editor
mkdir -p "$dest/bin"
rm -f "$dest"/*.mjs
cp "$src"/*.mjs "$dest/" # the tests, beside the library they import
if ! { [ -f "$dest/.installed" ] && cmp -s "$src/package-lock.json" "$dest/.installed" && [ -d "$dest/node_modules/vscode-jsonrpc" ]; }; then
	cp "$src/package.json" "$src/package-lock.json" "$dest/"
	npm ci --prefix "$dest" --no-audit --no-fund --loglevel=error
	cp "$src/package-lock.json" "$dest/.installed"
fi
go build -o "$dest/bin/" ./cmd/nexusd
bash scripts/mcp-servers.sh # the MCP servers of the McpHub's tests
mcp=$PWD/.cache/mcp-servers
cd "$dest"
NEXUSD="$PWD/bin/nexusd" NEXUS_MCP_SERVERS="$mcp" exec node --test --test-reporter=spec "$@" ./*.test.mjs
