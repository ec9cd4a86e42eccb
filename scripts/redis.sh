#!/usr/bin/env bash
# redis-server for the Redis runtime backend's tests and benchmark: the state
# conformance suite, integration/redis_test.go and `go run ./bench -only redis`
# start their own redis-server on a free loopback port and stop it.
#
#   scripts/redis.sh install   reuse redis-server from PATH, else apt-get
#                              install redis-server (Debian's package; root)
#   scripts/redis.sh path      print the redis-server that the tests run
set -euo pipefail
. "$(dirname "$0")/deb.sh"

die() {
	echo "redis: $*" >&2
	exit 1
}

# The package starts a system-wide redis on port 6379; the tests run their
# own, so the service is left as the package set it up.
install() { need_deb redis redis-server redis-server; }

case "${1:-}" in
install) install ;;
path) command -v redis-server || die "redis-server is not installed: $0 install" ;;
*) die "usage: $0 install|path" ;;
esac
