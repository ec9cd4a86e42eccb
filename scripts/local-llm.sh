#!/usr/bin/env bash
# A real OpenAI-/Anthropic-compatible LLM server for offline tests: llama.cpp's
# llama-server (Debian unstable's llama.cpp-tools) in a debootstrap chroot,
# serving a tiny random-weight model that integration/localllm/mkgguf.py writes.
# Its text is meaningless; its wire (HTTP, SSE, tool-call deltas) is real.
#
#   scripts/local-llm.sh install     build or reuse the chroot and /tiny.gguf (root)
#   scripts/local-llm.sh serve PORT  llama-server on 127.0.0.1:PORT, in the foreground (root)
#   scripts/local-llm.sh path        print the chroot's directory
#
# Cached under ${XDG_CACHE_HOME:-~/.cache}/nexus/local-llm. The Debian mirror is
# the one apt uses here (read from /etc/apt/sources.list{,.d}); NEXUS_DEBIAN_MIRROR
# overrides it.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
src=$repo/integration/localllm
cache=${XDG_CACHE_HOME:-$HOME/.cache}/nexus/local-llm
root=$cache/sid
done_marker=$cache/debootstrap.done # written only after debootstrap fully succeeded
packages=llama.cpp-tools,python3-gguf,python3-numpy
mounts=(proc dev sys)

die() {
	echo "local-llm: $*" >&2
	exit 1
}

need_root() {
	[ "$(id -u)" = 0 ] || die "$1 needs root (debootstrap, chroot and bind mounts): sudo $0 $*"
}

# The Debian archive apt uses here: the first enabled "deb" source whose URI
# ends in /debian, from the one-line (.list) or deb822 (.sources) files.
debian_mirror() {
	if [ -n "${NEXUS_DEBIAN_MIRROR:-}" ]; then
		echo "$NEXUS_DEBIAN_MIRROR"
		return
	fi
	local f files=()
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && files+=("$f")
	done
	[ ${#files[@]} -gt 0 ] || die "no apt sources in /etc/apt; set NEXUS_DEBIAN_MIRROR"
	local m
	m=$(awk '
		function pick(uris,   n, a, i) {
			if (found) return
			n = split(uris, a, /[ \t]+/)
			for (i = 1; i <= n; i++) if (a[i] ~ /^https?:\/\/.*\/debian\/?$/) { sub(/\/$/, "", a[i]); print a[i]; found = 1; exit }
		}
		FNR == 1 { stanza(); deb822 = (FILENAME ~ /\.sources$/) }
		function stanza() { if (types ~ /(^|[ \t])deb([ \t]|$)/ && enabled !~ /^[ \t]*(no|false)/) pick(uris); types = ""; uris = ""; enabled = "" }
		/^[ \t]*#/ { next }
		deb822 && /^[ \t]*$/ { stanza(); next }
		deb822 && tolower($1) == "types:" { sub(/^[^:]*:/, ""); types = $0; next }
		deb822 && tolower($1) == "uris:" { sub(/^[^:]*:/, ""); uris = $0; next }
		deb822 && tolower($1) == "enabled:" { sub(/^[^:]*:/, ""); enabled = tolower($0); next }
		!deb822 && $1 == "deb" {
			i = 2
			if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
			pick($i)
		}
		END { stanza() }
	' "${files[@]}")
	[ -n "$m" ] || die "no Debian mirror (a deb source ending in /debian) in apt's sources; set NEXUS_DEBIAN_MIRROR"
	echo "$m"
}

# Bind mounts: mount_all records the ones it made in $mounted, and
# unmount_all undoes exactly those, so a chroot already mounted by someone
# else is left as it was.
mounted=()
mount_all() {
	local m
	for m in "${mounts[@]}"; do
		if ! mountpoint -q "$root/$m"; then
			mount --bind "/$m" "$root/$m"
			mounted+=("$m")
		fi
	done
}
unmount_all() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount "$root/${mounted[i]}" || umount -l "$root/${mounted[i]}" || true
	done
	mounted=()
}

# Anything still mounted inside the chroot (a serve killed with -9): unmount
# it before the tree is removed, or rm would reach the host's /dev and /sys.
unmount_leftovers() {
	local m
	for m in "${mounts[@]}"; do
		while mountpoint -q "$root/$m"; do umount "$root/$m" || umount -l "$root/$m"; done
	done
}

install() {
	need_root install
	local start=$SECONDS t
	if ! command -v debootstrap >/dev/null; then
		echo "local-llm: installing debootstrap"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
	fi
	mkdir -p "$cache"
	# Test packages run side by side and each may install: one at a time.
	exec 9>"$cache/install.lock"
	flock 9
	if [ -f "$done_marker" ] && [ -x "$root/usr/bin/llama-server" ]; then
		echo "local-llm: reusing the chroot in $root"
	else
		if [ -e "$root" ]; then
			echo "local-llm: removing an unfinished chroot in $root"
			unmount_leftovers
			rm -rf --one-file-system "$root"
		fi
		rm -f "$done_marker"
		local mirror
		mirror=$(debian_mirror)
		echo "local-llm: debootstrap sid from $mirror into $root (a few minutes)"
		t=$SECONDS
		debootstrap --variant=minbase --include="$packages" sid "$root" "$mirror"
		[ -x "$root/usr/bin/llama-server" ] || die "debootstrap finished but $root/usr/bin/llama-server is missing"
		date -u +%FT%TZ >"$done_marker"
		echo "local-llm: debootstrap took $((SECONDS - t)) s"
	fi
	# The model: made again when either file of the repo changed.
	if [ -s "$root/tiny.gguf" ] && cmp -s "$src/mkgguf.py" "$root/mkgguf.py" && cmp -s "$src/template.jinja" "$root/template.jinja"; then
		echo "local-llm: reusing /tiny.gguf"
	else
		cp "$src/mkgguf.py" "$src/template.jinja" "$root/"
		rm -f "$root/tiny.gguf"
		trap unmount_all EXIT
		mount_all
		chroot "$root" python3 /mkgguf.py /tiny.gguf.tmp /template.jinja
		mv "$root/tiny.gguf.tmp" "$root/tiny.gguf"
		unmount_all
		trap - EXIT
	fi
	echo "local-llm: ready in $((SECONDS - start)) s ($(du -sh --one-file-system "$root" | cut -f1) in $root)"
}

serve() {
	need_root serve "$@"
	local port=${1:-}
	[[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "usage: $0 serve PORT"
	[ -f "$done_marker" ] && [ -s "$root/tiny.gguf" ] || die "no chroot or model in $root; run: $0 install"
	# Each server mounts /proc, /dev and /sys in its own mount namespace,
	# so that servers run side by side (tests of several packages) and one
	# stopping unmounts nothing under another.
	if [ -z "${NEXUS_LOCAL_LLM_NS:-}" ]; then
		NEXUS_LOCAL_LLM_NS=1 exec unshare --mount --propagation private bash "$0" serve "$port"
	fi
	local pid=
	# On exit, and on SIGTERM/SIGINT/SIGHUP: stop llama-server, then unmount.
	# (bash runs a trap only between commands, so llama-server runs as a
	# child we wait for, and the trap forwards the signal to it.)
	stop() {
		if [ -n "$pid" ]; then
			kill -TERM "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
			pid=
		fi
		unmount_all
	}
	trap stop EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
	trap 'exit 129' HUP
	mount_all
	chroot "$root" llama-server -m /tiny.gguf --host 127.0.0.1 --port "$port" --jinja -c 32768 &
	pid=$!
	local rc=0
	wait "$pid" || rc=$?
	pid=
	exit "$rc"
}

case "${1:-}" in
install) install ;;
serve) serve "${2:-}" ;;
path) echo "$root" ;;
*)
	echo "usage: $0 install | serve PORT | path" >&2
	exit 2
	;;
esac
