#!/usr/bin/env bash
# The tests of the portable packages as linux/arm64 binaries, run under
# qemu user emulation (Debian's qemu-user: qemu-aarch64), one package at a
# time from its own directory (tests read testdata relative to it). Prints
# a line per package with its time, then the total. Nothing else of the
# machine is emulated: a test that starts a program runs the host's
# (git, redis-server), and one that runs its own binary again cannot (no
# binfmt_misc here), which is why the list below is what it is.
#
#   scripts/test-arm64.sh                the packages below
#   scripts/test-arm64.sh ./state …      these (go list patterns)
#   scripts/test-arm64.sh install        only install qemu-user
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deb.sh

# What passes under qemu-aarch64 here; add a package once it does.
default_packages=(./state ./workspace ./tools/policy ./tools/core ./daemon ./agent/... ./llm ./events ./access ./tools ./internal/inert)

die() {
	echo "test-arm64: $*" >&2
	exit 1
}

install() { need_deb test-arm64 qemu-aarch64 qemu-user; }

if [ "${1:-}" = install ]; then
	install
	exit 0
fi
install

packages=("$@")
[ ${#packages[@]} -gt 0 ] || packages=("${default_packages[@]}")
go=${GO:-go}
export GOOS=linux GOARCH=arm64 CGO_ENABLED=0
bins=$(mktemp -d)
trap 'rm -rf "$bins"' EXIT

total=$SECONDS
start=$SECONDS
# Import path and directory of each package that has tests.
mapfile -t listed < <("$go" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "${packages[@]}")
for l in "${listed[@]}"; do
	pkg=${l%% *}
	"$go" test -c -o "$bins/${pkg//\//_}.test" "$pkg"
done
echo "test-arm64: built ${#listed[@]} test binaries in $((SECONDS - start))s"

failed=()
for l in "${listed[@]}"; do
	pkg=${l%% *} dir=${l#* }
	start=$SECONDS
	log=$(mktemp)
	if (cd "$dir" && qemu-aarch64 "$bins/${pkg//\//_}.test" -test.count=1 -test.timeout=30m) >"$log" 2>&1; then
		printf 'test-arm64: ok    %-55s %4ds\n' "$pkg" $((SECONDS - start))
	else
		printf 'test-arm64: FAIL  %-55s %4ds\n' "$pkg" $((SECONDS - start))
		sed 's/^/  /' "$log" | tail -60
		failed+=("$pkg")
	fi
	rm -f "$log"
done
echo "test-arm64: ${#listed[@]} packages in $((SECONDS - total))s under qemu-aarch64"
if [ ${#failed[@]} -gt 0 ]; then
	echo "test-arm64: failed: ${failed[*]}" >&2
	exit 1
fi
