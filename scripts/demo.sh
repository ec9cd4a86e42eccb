#!/usr/bin/env bash
# make demo: starts nexusd on a copy of examples/workspace, shows definitions
# and runtime values through the nexus CLI, then the main job: the example
# sandbox app (examples/app) calls tools with its own token, `nexus calls
# --watch --answer` shows each call stream from initiated to completed and
# approves the one the policy asks about, and the app's write is in the
# history. Run from the repository root after `make build` (NEXUS_BIN names
# another directory of nexusd and nexus; GO another go).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${NEXUS_BIN:-$root/bin}
tmp=$(mktemp -d)
ws=$tmp/workspace
cp -r "$root/examples/workspace" "$ws"
cleanup() {
  for p in ${watcher:-} ${pid:-}; do
    if kill -0 "$p" 2>/dev/null; then kill -TERM "$p"; wait "$p" || true; fi
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
nexus() { printf '$ nexus %s\n' "$*"; "$bin/nexus" --workspace "$ws" "$@"; }
# await FILE TEXT: waits until FILE holds TEXT, for at most 20 s.
await() {
  for _ in $(seq 1 1000); do grep -qF -- "$2" "$1" 2>/dev/null && return 0; sleep 0.02; done
  echo "demo: gave up waiting for \"$2\" in $1" >&2
  exit 1
}

step "build the example app (examples/app)"
(cd "$root" && "${GO:-go}" build -o "$tmp/planner-app" ./examples/app)
echo "built $tmp/planner-app"

step "start nexusd on $ws"
"$bin/nexusd" --workspace "$ws" --log-file "$ws/nexusd.log" &
pid=$!
await "$ws/.nexus/run/daemon.json" grpcAddress # written once it listens
cat "$ws/.nexus/run/daemon.json"

step "definitions: committed on first start, every edit a commit"
nexus def ls -r
printf '# Planner brief\n\nYou turn a request into a plan of small, reviewable steps.\n\n## Rules\n- Name every file a step touches.\n- Keep each step under ten minutes of work.\n' |
  nexus def set --app planner brief.md -m "planner: time-box each step"
nexus def log planner/brief.md

step "runtime values, namespaced by app, with a TTL"
nexus rt set --app planner owner alice --ttl 1h
nexus rt ls --app planner

step "the person's terminal answers: nexus calls --watch --answer"
# In the background, into a file shown below. Its stdin is one "y": it
# approves the first question only, then stops answering (the watch goes
# on), and a later question would be denied.
printf '$ echo y | nexus calls --watch --answer > calls.log &\n'
"$bin/nexus" --workspace "$ws" calls --watch --answer < <(printf 'y\n') >"$tmp/calls.log" 2>&1 &
watcher=$!
await "$tmp/calls.log" "answering the person's permission questions here"
cat "$tmp/calls.log"

step "the example app, with its own token: definitions, a runtime value, a log line, four tool calls"
printf '$ planner-app --workspace %s   (go run ./examples/app)\n' "$ws"
"$tmp/planner-app" --workspace "$ws"
await "$tmp/calls.log" "execute_command error"
kill -TERM "$watcher"; wait "$watcher" || true; watcher=

step "meanwhile, at the person's terminal: every call streamed, and the one that asked approved"
tail -n +2 "$tmp/calls.log"
grep -q 'write_file completed' "$tmp/calls.log" || { echo "demo: the approved write did not complete" >&2; exit 1; }

step "the approved write is in the history, by app:planner"
nexus def log planner/plans/today.md
nexus def get planner/plans/today.md
nexus rt get --app planner current-step; echo
grep 'plan written' "$ws/nexusd.log"
git --git-dir "$ws/.nexus/history.git" log -4 --format='%h %an %s'

step "stop: SIGTERM finishes in-flight writes and releases the lock"
kill -TERM "$pid"; wait "$pid"; pid=

step "go on"
cat <<'EOF'
  The agent: set a model in .nexus/config.yaml (llm: a profile with its
    provider, model and API key variable, or a local OpenAI-compatible
    server), then `nexus chat` in the workspace. See docs/agent.md.
  VS Code: install the extension; it starts nexusd for the folder and asks
    you in the editor. See docs/vscode.md.
  Your own app: copy examples/app, declare it under apps: in
    .nexus/config.yaml, and read its token from .nexus/run/apps/<id>.token.
EOF
