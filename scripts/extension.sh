#!/usr/bin/env bash
# Builds the VS Code extension in editors/vscode:
#   extension.sh install   installs its npm packages, pinned by its
#                          package-lock.json (npm ci; the npm cache is .cache/npm)
#   extension.sh vsix [OUT]
#                          install, then bundle and package the universal
#                          VSIX, without nexusd (OUT: editors/vscode/nexus.vsix)
#   extension.sh vsix-platform TARGET BINDIR OUT
#                          the VSIX of one VS Code target (linux-x64,
#                          linux-arm64, darwin-x64, darwin-arm64, win32-x64)
#                          carrying BINDIR's nexusd and nexus (.exe for
#                          win32) in its bin/: they are copied into
#                          editors/vscode/bin for the packaging only
#                          (scripts/dist.sh makes these)
# Needs node 20+ and npm (Debian: apt-get install nodejs npm); installs them
# with apt-get when they are missing and we are root.
# With SOURCE_DATE_EPOCH set, vsce sorts the entries and dates them then:
# the same inputs make the same VSIX.
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

# package OUT [vsce options]: vsce package into OUT (a path from the repo's root).
package() {
	local out=$1
	shift
	mkdir -p "$(dirname "$out")"
	out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
	(cd "$ext" && npx --no-install vsce package --no-dependencies --skip-license "$@" -o "$out")
}

case "${1:-}" in
install)
	install
	;;
vsix)
	install
	# bin/ is only ever there while a platform VSIX is packaged: the
	# universal one carries no nexusd.
	rm -rf "$ext/bin"
	package "${2:-$ext/nexus.vsix}"
	;;
vsix-platform)
	if [ $# -ne 4 ]; then
		echo "usage: extension.sh vsix-platform TARGET BINDIR OUT" >&2
		exit 2
	fi
	target=$2 bindir=$3 out=$4
	exe=
	case "$target" in
	win32-*) exe=.exe ;;
	linux-x64 | linux-arm64 | darwin-x64 | darwin-arm64) ;;
	*)
		echo "extension: unknown VS Code target $target (linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64)" >&2
		exit 2
		;;
	esac
	for b in nexusd nexus; do
		if [ ! -f "$bindir/$b$exe" ]; then
			echo "extension: $bindir/$b$exe is missing: the $target VSIX carries it" >&2
			exit 1
		fi
	done
	install
	rm -rf "$ext/bin"
	trap 'rm -rf "$ext/bin"' EXIT
	mkdir "$ext/bin"
	cp -p "$bindir/nexusd$exe" "$bindir/nexus$exe" "$ext/bin/"
	chmod 0755 "$ext/bin/nexusd$exe" "$ext/bin/nexus$exe"
	package "$out" --target "$target"
	;;
*)
	echo "usage: extension.sh install|vsix [OUT]|vsix-platform TARGET BINDIR OUT" >&2
	exit 2
	;;
esac
