package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// TestReviewShownIsWhatRuns through the real nexusd and a real `nexus
// calls --watch --answer`: an app's edit_file is asked about with the diff
// Nexus computed; when the person edits the file while the question is
// open, their "y" does not let the app write over it (the call fails,
// naming the file, and the person's text stays); asked again, the diff is
// of the file as it is now, and "y" writes exactly that.
func TestReviewShownIsWhatRuns(t *testing.T) {
	ws := newWorkspace(t, "apps:\n  - id: planner\ntools:\n  policy:\n    edit_file: ask\n")
	notes := filepath.Join(ws, "notes.md")
	if err := os.WriteFile(notes, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, ws)
	planner := as(d.appToken("planner"))
	edit := func() *nexusv1.ExecuteToolResponse {
		r, err := d.framework().ExecuteTool(planner, &nexusv1.ExecuteToolRequest{ToolName: "edit_file",
			ArgumentsJson: `{"path":"notes.md","oldText":"one","newText":"1"}`})
		if err != nil {
			t.Error(err)
			return &nexusv1.ExecuteToolResponse{}
		}
		return r
	}
	a := startAnswering(t, ws)

	done := make(chan *nexusv1.ExecuteToolResponse, 1)
	go func() { done <- edit() }()
	a.await("change:   modified notes.md")
	a.await("-one")
	a.await("+1") // the last line before "Allow? …", which ends no line
	if err := os.WriteFile(notes, []byte("one\ntwo\nthe person's line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.answer("y")
	if r := <-done; r.Success || !strings.Contains(r.Message, "notes.md changed after the person was shown the change; nothing was written") {
		t.Fatalf("the call wrote over what the person was not shown: %v", r)
	}
	if b, _ := os.ReadFile(notes); string(b) != "one\ntwo\nthe person's line\n" {
		t.Fatalf("notes.md: %q", b)
	}

	go func() { done <- edit() }()
	a.await("change:   modified notes.md")
	if l := a.await("@@"); !strings.Contains(l, "@@ -1,3 +1,3 @@") {
		t.Errorf("the second diff is not of the file as it is now: %q", l)
	}
	a.answer("y")
	if r := <-done; !r.Success {
		t.Fatalf("the approved edit: %v", r)
	}
	if b, _ := os.ReadFile(notes); string(b) != "1\ntwo\nthe person's line\n" {
		t.Fatalf("notes.md after the approved edit: %q", b)
	}
}

// TestChatShowsTheDiff: an agent session (the test's scripted model)
// edits a file through `nexus chat`; the permission request there shows
// the diff Nexus computed from the file, and "y" writes exactly it.
func TestChatShowsTheDiff(t *testing.T) {
	m := startScriptedModel(t)
	ws := newWorkspace(t, m.config())
	if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, ws)
	m.next("edit_file", `{"path":"notes.md","oldText":"two","newText":"2"}`)
	tm := startChat(t, ws)
	tm.await("the prompt", ready)
	tm.send("number the second line")
	s := tm.await("the permission request", func(s string) bool { return strings.HasSuffix(s, askPrompt) })
	if !strings.Contains(s, "  change:   modified notes.md\n  --- a/notes.md\n  +++ b/notes.md\n  @@ -1,2 +1,2 @@\n   one\n  -two\n  +2\n"+askPrompt) {
		t.Fatalf("the request shows no diff of notes.md:\n%s", s)
	}
	tm.send("y")
	tm.await("the end of the turn", func(s string) bool { return strings.Count(s, "\n> ") >= 2 })
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.md")); string(b) != "one\n2\n" {
		t.Errorf("notes.md after the approved edit: %q\n%s", b, tm.text())
	}
}
