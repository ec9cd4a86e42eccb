# Sourced by the scripts that install npm packages for the tests:
# need_npm NAME makes sure node and npm are there (installing Debian's
# nodejs and npm with apt-get when they are missing and we are root).
need_npm() {
	if command -v npm >/dev/null; then
		return
	fi
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
	else
		echo "$1: npm is needed (Debian: sudo apt-get install nodejs npm)" >&2
		exit 1
	fi
}
