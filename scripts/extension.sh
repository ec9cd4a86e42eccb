#!/usr/bin/env bash
# Builds the VS Code extension in editors/vscode:
#   extension.sh install   installs its npm packages, pinned by its
#                          package-lock.json (npm ci; the npm cache is .cache/npm)
#   extension.sh vsix      install, then bundle and package editors/vscode/nexus.vsix
# Needs node 20+ and npm (Debian: apt-get install nodejs npm); installs them
# with apt-get when they are missing and we are root.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/npm.sh
need_npm extension
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
	echo "extension: node 20 or later is needed; found $(node --version)" >&2
	exit 1
fi
ext=editors/vscode

install() {
	# node_modules is reused while the lockfile is the one it was installed from.
	if ! { [ -f "$ext/node_modules/.installed" ] && cmp -s "$ext/package-lock.json" "$ext/node_modules/.installed"; }; then
		npm ci --prefix "$ext" --no-audit --no-fund --loglevel=error --cache "$PWD/.cache/npm"
		cp "$ext/package-lock.json" "$ext/node_modules/.installed"
	fi
}

case "${1:-}" in
install)
	install
	;;
vsix)
	install
	(cd "$ext" && npx --no-install vsce package --no-dependencies --skip-license -o nexus.vsix)
	;;
*)
	echo "usage: extension.sh install|vsix" >&2
	exit 2
	;;
esac
