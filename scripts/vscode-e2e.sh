#!/usr/bin/env bash
# End-to-end tests of the VS Code extension in a real VS Code: code-server
# (VS Code 1.100.3 from npm) in Debian's Chromium, driven by playwright-core,
# offline. Usage: scripts/vscode-e2e.sh [install|run ARGS...|bench] (default:
# install and run). bench (make bench) builds the .vsix and prints the
# extension's benchmarks (run.mjs --bench); without code-server, and not
# root to install it, it prints one "skipped:" line.
#
# Installs only what is missing (root; idempotent):
#   - code-server 4.100.3 into ~/.cache/nexus/code-server (native modules are
#     compiled: apt build deps, node-gyp; @vscode/ripgrep's download of rg from
#     GitHub is avoided by seeding its cache with Debian's ripgrep);
#   - chromium from apt (/usr/bin/chromium);
#   - the harness's pinned npm packages (editors/vscode/e2e/package-lock.json)
#     into .cache/vscode-e2e.
# Then builds bin/nexusd and bin/nexus, takes editors/vscode/nexus.vsix when
# present (else packs the fixture extension of editors/vscode/e2e/fixture),
# and runs the scenarios of editors/vscode/e2e/run.mjs. Screenshots go to
# .cache/vscode-e2e/screenshots (VSCODE_E2E_SCREENSHOTS=DIR to change;
# editors/vscode/e2e/screenshots holds the checked-in copies the README shows).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/npm.sh

CODE_SERVER_VERSION=4.100.3 # the newest code-server whose engines field accepts Node 20
NODE_GYP_VERSION=12.4.0
cs_dir=${NEXUS_CODE_SERVER_DIR:-$HOME/.cache/nexus/code-server}
code_server=$cs_dir/node_modules/.bin/code-server
dest=.cache/vscode-e2e
src=editors/vscode/e2e

as_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "vscode-e2e: $1 is missing; run this once as root to install it" >&2
		exit 1
	fi
}

apt_updated=
apt_install() {
	as_root "$*"
	if [ -z "$apt_updated" ]; then
		apt-get update -qq
		apt_updated=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

install_code_server() {
	local pty=$cs_dir/node_modules/code-server/lib/vscode/node_modules/node-pty/build/Release/pty.node
	if [ -x "$code_server" ] && [ -f "$pty" ] && [ -f "$cs_dir/.installed-$CODE_SERVER_VERSION" ]; then
		return
	fi
	echo "vscode-e2e: installing code-server $CODE_SERVER_VERSION into $cs_dir (compiles native modules: minutes)"
	local pkgs=() p
	for p in build-essential pkg-config python3 libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev ripgrep; do
		dpkg -s "$p" >/dev/null 2>&1 || pkgs+=("$p")
	done
	if [ ${#pkgs[@]} -gt 0 ]; then
		apt_install "${pkgs[@]}"
	fi
	if ! command -v node-gyp >/dev/null; then
		as_root node-gyp
		npm install -g --no-audit --no-fund --loglevel=error "node-gyp@$NODE_GYP_VERSION"
	fi
	# @vscode/ripgrep downloads rg from GitHub in its postinstall unless its
	# cache (os.tmpdir()/vscode-ripgrep-cache-VERSION) already holds the asset.
	local tmp tmpdir v tag c
	tmp=$(mktemp -d)
	cp "$(command -v rg)" "$tmp/rg"
	tar -C "$tmp" -czf "$tmp/rg.tgz" rg
	tmpdir=$(node -p 'require("os").tmpdir()')
	for v in 1.15.9 1.15.10 1.15.11 1.15.12 1.15.13 1.15.14; do
		c=$tmpdir/vscode-ripgrep-cache-$v
		mkdir -p "$c"
		for tag in v13.0.0-10 v13.0.0-4; do
			cp "$tmp/rg.tgz" "$c/ripgrep-$tag-x86_64-unknown-linux-musl.tar.gz"
		done
	done
	rm -rf "$tmp"
	mkdir -p "$cs_dir"
	(cd "$cs_dir" && npm_config_yes=true npm install --unsafe-perm --no-audit --no-fund --loglevel=error \
		"code-server@$CODE_SERVER_VERSION")
	if [ ! -f "$pty" ]; then
		echo "vscode-e2e: code-server's node-pty did not build ($pty is missing)" >&2
		exit 1
	fi
	touch "$cs_dir/.installed-$CODE_SERVER_VERSION"
}

install_chromium() {
	if [ -x /usr/bin/chromium ]; then
		return
	fi
	echo "vscode-e2e: installing chromium from apt"
	apt_install chromium
}

install_harness() {
	mkdir -p "$dest"
	if ! command -v python3 >/dev/null; then # fixture/pack.mjs zips with it
		apt_install python3
	fi
	if [ -f "$dest/.installed" ] && cmp -s "$src/package-lock.json" "$dest/.installed" && [ -d "$dest/node_modules/playwright-core" ]; then
		return
	fi
	cp "$src/package.json" "$src/package-lock.json" "$dest/"
	npm ci --prefix "$dest" --no-audit --no-fund --loglevel=error
	cp "$src/package-lock.json" "$dest/.installed"
}

install_all() {
	need_npm vscode-e2e
	local major
	major=$(node -p 'process.versions.node.split(".")[0]')
	if [ "$major" -lt 20 ]; then
		echo "vscode-e2e: node 20 or later is needed; found $(node --version)" >&2
		exit 1
	fi
	local start=$SECONDS
	install_code_server
	install_chromium
	install_harness
	echo "vscode-e2e: install took $((SECONDS - start)) s"
}

# The .vsix to test: the real extension's when it is there, else the fixture's.
pick_vsix() {
	if [ -n "${NEXUS_VSIX:-}" ]; then
		echo "$NEXUS_VSIX"
	elif [ -f editors/vscode/nexus.vsix ]; then
		echo editors/vscode/nexus.vsix
	else
		node "$src/fixture/pack.mjs" "$dest/fixture" "$dest/nexus-fixture.vsix" >&2
		echo "$dest/nexus-fixture.vsix"
	fi
}

run_all() {
	make --no-print-directory build >/dev/null
	local vsix
	vsix=$(pick_vsix)
	echo "vscode-e2e: testing $vsix"
	# One extensions dir for every scenario, fresh each run and its own (in
	# /tmp, not in .cache, which worktrees share); each scenario has its own
	# user data dir and workspace (run.mjs).
	local run_dir ext
	run_dir=$(mktemp -d "${TMPDIR:-/tmp}/nexus-vscode-e2e-XXXXXX")
	trap "rm -rf '$run_dir'" EXIT
	ext=$run_dir/extensions
	mkdir -p "$run_dir/install"
	printf 'bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n' >"$run_dir/install/config.yaml"
	"$code_server" --config "$run_dir/install/config.yaml" --user-data-dir "$run_dir/install/data" \
		--extensions-dir "$ext" --install-extension "$vsix" >"$run_dir/install/log" 2>&1 ||
		{ cat "$run_dir/install/log" >&2; exit 1; }
	local fixture=
	case "$vsix" in *fixture*) fixture=1 ;; esac
	NEXUS_VSIX="$vsix" \
		CODE_SERVER="$code_server" \
		NEXUS_BIN="$PWD/bin" \
		NEXUS_E2E_FIXTURE="$fixture" \
		NEXUS_E2E_EXTENSIONS="$ext" \
		VSCODE_E2E_CACHE="$PWD/$dest" \
		VSCODE_E2E_SCREENSHOTS="${VSCODE_E2E_SCREENSHOTS:-$PWD/$dest/screenshots}" \
		node "$src/run.mjs" "$@"
}

case "${1:-all}" in
install) install_all ;;
run) shift; run_all "$@" ;;
all) shift || true; install_all; run_all "$@" ;;
bench)
	if [ "$(id -u)" != 0 ] && { [ ! -x "$code_server" ] || [ ! -x /usr/bin/chromium ]; }; then
		echo "skipped: vscode bench: code-server or chromium is missing; run scripts/vscode-e2e.sh install once as root"
		exit 0
	fi
	install_all >/dev/null
	bash scripts/extension.sh vsix >"$dest/vsix.log" 2>&1 || { cat "$dest/vsix.log" >&2; exit 1; }
	NEXUS_VSIX=editors/vscode/nexus.vsix run_all --bench | grep -v '^vscode-e2e: testing'
	;;
*) echo "usage: $0 [install|run ARGS...|bench]" >&2; exit 2 ;;
esac
