#!/usr/bin/env bash
# redis-server for the Redis runtime backend's tests and benchmark: the state
# conformance suite, integration/redis_test.go and `go run ./bench -only redis`
# start their own redis-server on a free loopback port and stop it.
#
#   scripts/redis.sh install   reuse redis-server from PATH, else apt-get
#                              install redis-server (Debian's package; root)
#   scripts/redis.sh path      print the redis-server that the tests run
set -euo pipefail

die() {
	echo "redis: $*" >&2
	exit 1
}

install() {
	if command -v redis-server >/dev/null; then
		return
	fi
	[ "$(id -u)" = 0 ] || die "redis-server is not installed and installing it needs root: sudo apt-get install -y redis-server"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y --no-install-recommends redis-server >/dev/null ||
		{ apt-get update >/dev/null && apt-get install -y --no-install-recommends redis-server >/dev/null; } ||
		die "apt-get install redis-server failed"
	# The package starts a system-wide redis on port 6379; the tests run
	# their own, so leave the service as the package set it up.
	command -v redis-server >/dev/null || die "redis-server is still not on PATH after apt-get install"
}

case "${1:-}" in
install) install ;;
path) command -v redis-server || die "redis-server is not installed: $0 install" ;;
*) die "usage: $0 install|path" ;;
esac
