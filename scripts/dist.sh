#!/usr/bin/env bash
# Builds what a person installs Nexus from without Go, into dist/:
#   dist.sh              for every target (linux/amd64 linux/arm64
#                        darwin/amd64 darwin/arm64 windows/amd64;
#                        DIST_TARGETS="linux/amd64 ..." to build fewer):
#                          nexus_VERSION_OS_ARCH.tar.gz (.zip for windows):
#                            nexus_VERSION_OS_ARCH/ with nexusd, nexus (.exe
#                            for windows), README.md and LICENSE when present
#                          nexus-TARGET.vsix: the VS Code extension for that
#                            platform (linux-x64, linux-arm64, darwin-x64,
#                            darwin-arm64, win32-x64) with its nexusd and
#                            nexus in the extension's bin/
#                        then nexus-universal.vsix, the extension without a
#                        binary (it runs nexus.daemonPath or nexusd from
#                        PATH), and SHA256SUMS (sha256sum's format) over
#                        all of them. An earlier dist/ is removed first.
#   dist.sh vsix TARGET...
#                        only the platform VSIX of each VS Code TARGET (or
#                        GOOS/GOARCH), into dist/, leaving the rest of dist/
#                        alone: the VS Code end-to-end test's, one target
#                        instead of five (make vsix-linux-x64).
# Every binary is built with CGO_ENABLED=0, -trimpath, -buildid= and the
# version from git (VERSION, else git describe, as make build), and archives
# and VSIXes date their entries at the commit's time (SOURCE_DATE_EPOCH):
# two runs from the same commit make the same files. When a target does not
# build, nothing is packaged and the script fails naming each such target
# with the compiler's first words.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"
out=dist
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
export SOURCE_DATE_EPOCH
ldflags="-s -w -buildid= -X main.version=$version -X github.com/nexuscocreate/nexus/cli.Version=$version"

# vscode_target GOOS/GOARCH: the VS Code target of a Go target.
vscode_target() {
	case "$1" in
	linux/amd64) echo linux-x64 ;;
	linux/arm64) echo linux-arm64 ;;
	darwin/amd64) echo darwin-x64 ;;
	darwin/arm64) echo darwin-arm64 ;;
	windows/amd64) echo win32-x64 ;;
	*) return 1 ;;
	esac
}

# go_target TARGET: the Go target of a VS Code target or of a Go target.
go_target() {
	local t
	for t in $all_targets; do
		if [ "$1" = "$t" ] || [ "$1" = "$(vscode_target "$t")" ]; then
			echo "$t"
			return
		fi
	done
	echo "dist: unknown target $1 (one of: $all_targets, or their VS Code names linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64)" >&2
	return 1
}

work=$out/.work
trap 'rm -rf "$work"' EXIT

# build TARGET...: nexusd and nexus of each Go target into $work/OS_ARCH;
# every target is tried, then the ones that did not build are named.
build() {
	local t failed=() dir
	for t in "$@"; do
		dir=$work/${t/\//_}
		rm -rf "$dir"
		mkdir -p "$dir"
		echo "dist: building nexusd and nexus $version for $t"
		if ! CGO_ENABLED=0 GOOS=${t%/*} GOARCH=${t#*/} go build -trimpath -ldflags "$ldflags" \
			-o "$dir/" ./cmd/nexusd ./cmd/nexus 2>"$dir.log"; then
			failed+=("$t")
		fi
	done
	if [ ${#failed[@]} -gt 0 ]; then
		for t in "${failed[@]}"; do
			echo "dist: $t did not build:" >&2
			head -n 25 "$work/${t/\//_}.log" | sed 's/^/    /' >&2
		done
		echo "dist: FAILED: ${failed[*]} did not build; nothing was packaged" >&2
		exit 1
	fi
}

# archive TARGET: nexus_VERSION_OS_ARCH.tar.gz, or .zip for windows.
archive() {
	local t=$1 goos=${1%/*} exe= name stage f files=()
	name=nexus_${version}_${t/\//_}
	[ "$goos" = windows ] && exe=.exe
	stage=$work/stage-${t/\//_}
	rm -rf "$stage"
	mkdir -p "$stage/$name"
	cp "$work/${t/\//_}/nexusd$exe" "$work/${t/\//_}/nexus$exe" "$stage/$name/"
	chmod 0755 "$stage/$name/nexusd$exe" "$stage/$name/nexus$exe"
	for f in README.md LICENSE; do
		if [ -f "$f" ]; then
			cp "$f" "$stage/$name/"
			chmod 0644 "$stage/$name/$f"
		fi
	done
	find "$stage/$name" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	if [ "$goos" = windows ]; then
		rm -f "$out/$name.zip"
		mapfile -t files < <(cd "$stage" && find "$name" | LC_ALL=C sort)
		(cd "$stage" && TZ=UTC zip -q -X -9 "$OLDPWD/$out/$name.zip" "${files[@]}")
		echo "dist: $out/$name.zip"
	else
		tar -C "$stage" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
			--format=gnu -cf - "$name" | gzip -9n >"$out/$name.tar.gz"
		echo "dist: $out/$name.tar.gz"
	fi
}

# vsix TARGET: the platform VSIX of a Go target, with its binaries.
vsix() {
	local t=$1 vt
	vt=$(vscode_target "$t")
	bash scripts/extension.sh vsix-platform "$vt" "$work/${t/\//_}" "$out/nexus-$vt.vsix" >"$work/vsix.log" 2>&1 ||
		{ cat "$work/vsix.log" >&2; echo "dist: the $vt VSIX did not package" >&2; exit 1; }
	echo "dist: $out/nexus-$vt.vsix"
}

case "${1:-all}" in
all)
	targets=()
	for t in ${DIST_TARGETS:-$all_targets}; do
		targets+=("$(go_target "$t")")
	done
	rm -rf "$out"
	mkdir -p "$out"
	build "${targets[@]}"
	for t in "${targets[@]}"; do
		archive "$t"
		vsix "$t"
	done
	bash scripts/extension.sh vsix "$out/nexus-universal.vsix" >"$work/vsix.log" 2>&1 ||
		{ cat "$work/vsix.log" >&2; echo "dist: the universal VSIX did not package" >&2; exit 1; }
	echo "dist: $out/nexus-universal.vsix"
	(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
	echo "dist: $out/SHA256SUMS"
	;;
vsix)
	shift
	if [ $# -eq 0 ]; then
		echo "usage: dist.sh vsix TARGET... (linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64)" >&2
		exit 2
	fi
	targets=()
	for t in "$@"; do
		targets+=("$(go_target "$t")")
	done
	mkdir -p "$out"
	build "${targets[@]}"
	for t in "${targets[@]}"; do
		vsix "$t"
	done
	;;
*)
	echo "usage: dist.sh [all] | dist.sh vsix TARGET..." >&2
	exit 2
	;;
esac
