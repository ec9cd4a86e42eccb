#!/usr/bin/env bash
# Installs the MCP servers the McpHub tests run, pinned by
# integration/mcpservers/package-lock.json, into .cache/mcp-servers.
# Needs node and npm (Debian: apt-get install nodejs npm); installs them
# with apt-get when they are missing and we are root.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/npm.sh
need_npm mcp-servers
dest=.cache/mcp-servers
src=integration/mcpservers
mkdir -p "$dest"
cp "$src"/*.mjs "$dest/" # our own test servers, beside the SDK they import
if [ -f "$dest/.installed" ] && cmp -s "$src/package-lock.json" "$dest/.installed"; then
	exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dest/"
npm ci --prefix "$dest" --no-audit --no-fund --loglevel=error
cp "$src/package-lock.json" "$dest/.installed"
