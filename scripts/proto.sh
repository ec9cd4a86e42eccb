#!/usr/bin/env bash
# Regenerates the Go code of proto/ with the generators pinned in proto/tools.mod.
# Usage: scripts/proto.sh [check]   (check: fail when the checked-in code is stale)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${NEXUS_TOOLS_BIN:-$PWD/.cache/bin}
mkdir -p "$bin"
(cd proto && GOFLAGS=-mod=mod go build -modfile=tools.mod -o "$bin/" \
  github.com/bufbuild/buf/cmd/buf \
  google.golang.org/protobuf/cmd/protoc-gen-go \
  google.golang.org/grpc/cmd/protoc-gen-go-grpc)
export PATH="$bin:$PATH"
if [ "${1:-}" = check ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  cp -r proto "$tmp/"
  (cd "$tmp/proto" && buf generate)
  if ! diff -r -q proto "$tmp/proto" >/dev/null; then
    diff -r proto "$tmp/proto" | head -40 >&2
    echo "generated protobuf code is stale: run 'make proto' and commit the result" >&2
    exit 1
  fi
  (cd proto && buf lint)
  echo "protobuf code is up to date"
else
  (cd proto && buf generate && buf lint)
fi
