#!/usr/bin/env bash
# Builds and vets the whole tree for every target Nexus supports:
# linux/amd64, linux/arm64, darwin/amd64, darwin/arm64 and windows/amd64.
# For each, `go build ./...` then `go vet ./...` (which type-checks the
# tests too) with GOOS and GOARCH set, and one line with its time. Nothing
# runs: see scripts/test-arm64.sh for tests beyond this machine's. cgo
# is as go sets it: on for this machine's own target (so that its build
# cache is make build's), off for the others, which need no C compiler.
#
#   scripts/cross.sh                 every target
#   scripts/cross.sh linux/arm64 …   only these
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64)
go=${GO:-go}

failed=()
total=$SECONDS
for t in "${targets[@]}"; do
	os=${t%/*} arch=${t#*/}
	if [ "$os" = "$t" ] || [ -z "$arch" ]; then
		echo "cross: $t is not GOOS/GOARCH" >&2
		exit 2
	fi
	start=$SECONDS
	log=$(mktemp)
	if GOOS=$os GOARCH=$arch "$go" build ./... >"$log" 2>&1 &&
		GOOS=$os GOARCH=$arch "$go" vet ./... >>"$log" 2>&1; then
		printf 'cross: %-14s ok    %3ds\n' "$t" $((SECONDS - start))
	else
		printf 'cross: %-14s FAIL  %3ds\n' "$t" $((SECONDS - start))
		sed 's/^/  /' "$log"
		failed+=("$t")
	fi
	rm -f "$log"
done
echo "cross: ${#targets[@]} targets in $((SECONDS - total))s"
if [ ${#failed[@]} -gt 0 ]; then
	echo "cross: failed: ${failed[*]}" >&2
	exit 1
fi
