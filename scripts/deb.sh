# Sourced by the scripts that need a program from Debian's packages.
#
#   need_deb WHO PROGRAM PACKAGE
#
# returns at once when PROGRAM is on PATH; else, as root, installs PACKAGE
# with apt-get (updating the lists once if the first try fails) and checks
# that PROGRAM is there now; else exits naming what to install. WHO starts
# every message.
need_deb() {
	local who=$1 program=$2 package=$3
	if command -v "$program" >/dev/null; then
		return
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "$who: $program is not installed and installing it needs root: sudo apt-get install -y $package" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! { apt-get install -y --no-install-recommends "$package" >/dev/null ||
		{ apt-get update >/dev/null && apt-get install -y --no-install-recommends "$package" >/dev/null; }; }; then
		echo "$who: apt-get install $package failed" >&2
		exit 1
	fi
	if ! command -v "$program" >/dev/null; then
		echo "$who: $program is still not on PATH after apt-get install $package" >&2
		exit 1
	fi
}
