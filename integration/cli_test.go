package integration

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCLI drives the real nexus CLI against the real daemon, as a person
// at the terminal would.
func TestCLI(t *testing.T) {
	ws := newWorkspace(t, twoApps)
	run := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := nexus(t, ws, stdin, args...)
		if code != 0 {
			t.Fatalf("nexus %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	// No daemon yet: a clear message, exit 1.
	if _, errOut, code := nexus(t, ws, "", "def", "ls"); code != 1 || !strings.Contains(errOut, "no nexusd is running for workspace") {
		t.Fatalf("without a daemon: exit %d, %q", code, errOut)
	}
	d := startDaemon(t, ws)

	r1 := strings.TrimSpace(run("steps:\n  - plan\n", "def", "set", "--app", "planner", "flow.yaml", "-m", "first flow"))
	r2 := strings.TrimSpace(run("steps:\n  - plan\n  - build\n", "def", "set", "planner/flow.yaml"))
	if got := run("", "def", "get", "--app", "planner", "flow.yaml"); got != "steps:\n  - plan\n  - build\n" {
		t.Errorf("get = %q", got)
	}
	if got := run("", "def", "get", "planner/flow.yaml", "--rev", r1[:10]); got != "steps:\n  - plan\n" {
		t.Errorf("get at r1 = %q", got)
	}
	if got, want := run("", "def", "diff", "planner/flow.yaml", r1, r2), git(t, ws, "diff", "--abbrev=7", r1, r2, "--", "planner/flow.yaml"); got != want {
		t.Errorf("diff = %q, git %q", got, want)
	}
	log := run("", "def", "log", "planner/flow.yaml")
	if !strings.Contains(log, r2[:12]) || !strings.Contains(log, "first flow") || !strings.Contains(log, " cli ") {
		t.Errorf("log:\n%s", log)
	}
	var page struct {
		Entries []struct{ Revision, Author, Change string }
	}
	if err := json.Unmarshal([]byte(run("", "--json", "def", "log", "planner/flow.yaml")), &page); err != nil || len(page.Entries) != 2 ||
		page.Entries[0].Revision != r2 || page.Entries[1].Change != "ADDED" || page.Entries[1].Author != "cli" {
		t.Errorf("log --json = %+v, %v", page, err)
	}
	patch := "@@ -1,3 +1,3 @@\n steps:\n   - plan\n-  - build\n+  - ship\n"
	run(patch, "def", "apply", "planner/flow.yaml", "-")
	if got := run("", "def", "get", "planner/flow.yaml"); !strings.Contains(got, "ship") {
		t.Errorf("after apply: %q", got)
	}
	run("", "def", "restore", "planner/flow.yaml", r1)
	if got := run("", "def", "get", "planner/flow.yaml"); got != "steps:\n  - plan\n" {
		t.Errorf("after restore: %q", got)
	}
	if ls := run("", "def", "ls", "-r"); !strings.Contains(ls, "planner/flow.yaml") {
		t.Errorf("ls:\n%s", ls)
	}
	if _, errOut, code := nexus(t, ws, "x", "def", "set", "planner/flow.yaml", "--expect", r1); code != 1 || !strings.Contains(errOut, "aborted") {
		t.Errorf("stale --expect: exit %d, %q", code, errOut)
	}
	run("", "def", "rm", "planner/flow.yaml")
	if _, errOut, code := nexus(t, ws, "", "def", "get", "planner/flow.yaml"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("get after rm: exit %d, %q", code, errOut)
	}

	run("", "rt", "set", "--app", "planner", "job/1", "running")
	run("", "rt", "set", "--app", "planner", "job/2", "queued", "--ttl", "1h")
	if got := run("", "rt", "get", "--app", "planner", "job/1"); got != "running" {
		t.Errorf("rt get = %q", got)
	}
	if got := run("", "rt", "ls", "--app", "planner", "job/"); got != "job/1\njob/2\n" {
		t.Errorf("rt ls = %q", got)
	}
	run("", "rt", "rm", "--app", "planner", "job/1")
	if _, errOut, code := nexus(t, ws, "", "rt", "get", "--app", "planner", "job/1"); code != 1 || !strings.Contains(errOut, `key "job/1" not found`) {
		t.Errorf("rt get after rm: exit %d, %q", code, errOut)
	}
	run("", "log", "--app", "planner", "--task", "t1", "reviewed", "the", "plan")
	d.stop()
	if !strings.Contains(d.stderr.String(), `msg="reviewed the plan"`) || !strings.Contains(d.stderr.String(), "task=t1") {
		t.Errorf("LogMessage not in the daemon log:\n%s", d.stderr)
	}
}
