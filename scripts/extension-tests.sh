#!/usr/bin/env bash
# Checks the VS Code extension (editors/vscode): installs its pinned npm
# packages (scripts/extension.sh), typechecks (tsc --noEmit), lints (eslint),
# bundles it, then runs its tests (editors/vscode/test/*.test.ts, bundled
# with esbuild and run by node --test): the protocol module and the view
# models against the real nexusd --stdio, built beside them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/extension.sh install
ext=editors/vscode
(cd "$ext" && npm run --silent typecheck && npm run --silent lint && npm run --silent bundle 2>/dev/null)
# integration/editor/protocol.mjs is protocol.ts built for the Node tests'
# client: it must be the build of the protocol.ts checked in.
(cd "$ext" && npx --no-install esbuild src/protocol.ts --format=esm --platform=node --target=node20 \
	--banner:js="// Generated from editors/vscode/src/protocol.ts by npm run bundle:protocol; do not edit." 2>/dev/null) |
	cmp -s - integration/editor/protocol.mjs || {
	echo "extension-tests: integration/editor/protocol.mjs is stale: run npm run bundle:protocol in $ext" >&2
	exit 1
}
shopt -s nullglob
tests=("$ext"/test/*.test.ts)
if [ ${#tests[@]} -eq 0 ]; then
	exit 0
fi
rm -rf "$ext/dist/test"
(cd "$ext" && npm run --silent bundle:tests 2>/dev/null)
mkdir -p "$ext/dist/bin"
go build -o "$ext/dist/bin/" ./cmd/nexusd
cd "$ext"
NEXUSD="$PWD/dist/bin/nexusd" exec node --test --test-reporter=spec "$@" dist/test/*.test.mjs
