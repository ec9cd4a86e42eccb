#!/usr/bin/env bash
# make demo: starts nexusd on a copy of examples/workspace and drives it with
# the nexus CLI, as an app and a person would. Run from the repository root
# after `make build`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/bin
tmp=$(mktemp -d)
ws=$tmp/workspace
cp -r "$root/examples/workspace" "$ws"
cleanup() {
  if [ -n "${pid:-}" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
nexus() { printf '$ nexus %s\n' "$*"; "$bin/nexus" --workspace "$ws" "$@"; }

step "start nexusd on $ws"
"$bin/nexusd" --workspace "$ws" --log-file "$ws/nexusd.log" &
pid=$!
for _ in $(seq 1 500); do [ -S "$ws/.nexus/run/nexusd.sock" ] && [ -f "$ws/.nexus/run/daemon.json" ] && break; sleep 0.02; done
cat "$ws/.nexus/run/daemon.json"

step "the example files were committed on first start (author: disk)"
nexus def ls -r
nexus def log planner/brief.md

step "an edit is a commit; the old version stays readable"
first=$("$bin/nexus" --workspace "$ws" --json def get planner/brief.md | sed 's/.*"revision":"\([0-9a-f]*\)".*/\1/')
printf '# Planner brief\n\nYou turn a request into a plan of small, reviewable steps.\n\n## Rules\n- Name every file a step touches.\n- Ask before running anything that writes outside the workspace.\n- Keep each step under ten minutes of work.\n' |
  nexus def set --app planner brief.md -m "planner: time-box each step"
nexus def log planner/brief.md
nexus def diff planner/brief.md "$first"

step "compare-and-swap: a write against a stale revision is refused"
echo "stale" | nexus def set planner/brief.md --expect "$first" || echo "(refused, as it should be)"

step "apply a unified diff, then restore the first version"
printf '@@ -5,3 +5,3 @@\n   - app: reviewer\n-    do: review\n+    do: review-and-approve\n   - app: planner\n' | nexus def apply shared/workflow.yaml -
nexus def get shared/workflow.yaml
nexus def restore planner/brief.md "$first" -m "back to the first brief"
nexus def log planner/brief.md

step "runtime values, namespaced by app, with a TTL"
nexus rt set --app planner current-step 2 --ttl 1h
nexus rt set --app planner owner alice
nexus rt ls --app planner
nexus rt get --app planner current-step; echo

step "an app logs through the daemon"
nexus log --app planner --task demo "plan ready for review" --context steps=3
grep 'plan ready' "$ws/nexusd.log"

step "the history is a real git repository"
git --git-dir "$ws/.nexus/history.git" log --format='%h %an %s' | head -8
git --git-dir "$ws/.nexus/history.git" fsck --strict --no-dangling && echo "git fsck: clean"

step "stop: SIGTERM finishes in-flight writes and releases the lock"
kill -TERM "$pid"; wait "$pid"; pid=
nexus def ls || true
