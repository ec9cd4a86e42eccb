package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

func TestParseAnswer(t *testing.T) {
	for in, want := range map[string]string{
		"y": "allow_once", "yes": "allow_once", "a": "allow_always", "always": "allow_always",
		"n": "reject_once", " no ": "reject_once", "N": "reject_always", "never": "reject_always",
		"": "", "maybe": "",
	} {
		got, ok := parseAnswer(in)
		if got != want || ok != (want != "") {
			t.Errorf("parseAnswer(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// TestRenderCalls: a tool call is one line in words (nexusd's title, which
// changes as the call ends), rewritten in place on a terminal while it is
// the last line, and a line per status otherwise; text between ends the
// line. A call worded generically (an MCP server's tool) shows its
// arguments.
func TestRenderCalls(t *testing.T) {
	up := func(kind, id, title, status string) chatUpdate {
		return chatUpdate{SessionUpdate: kind, ToolCallID: id, Title: title, Status: status, RawInput: json.RawMessage(`{"path": "a.md"}`)}
	}
	for _, c := range []struct {
		tty  bool
		want string
	}{
		{true, "  [pending] Write a.md\r\x1b[K  [in_progress] Write a.md\r\x1b[K  [failed] Write a.md: declined (rejected by the person)\nok\n" +
			"  [completed] Called github/get {\"path\":\"a.md\"}\n"},
		{false, "  [pending] Write a.md\n  [in_progress] Write a.md\n  [failed] Write a.md: declined (rejected by the person)\nok\n" +
			"  [completed] Called github/get {\"path\":\"a.md\"}\n"},
	} {
		var b bytes.Buffer
		r := &render{w: &b, tty: c.tty, calls: map[string]*chatCallLine{}}
		r.call(up("tool_call", "c1", "Write a.md", "pending"))
		r.call(up("tool_call_update", "c1", "", "in_progress"))
		r.call(up("tool_call_update", "c1", "Write a.md: declined (rejected by the person)", "failed"))
		r.text("ok")
		r.endLine()
		r.call(up("tool_call", "c2", "Called github/get", "completed"))
		if b.String() != c.want {
			t.Errorf("tty %v:\n%q\nwant\n%q", c.tty, b.String(), c.want)
		}
	}
}

// TestRenderSubagentCalls: a subagent's call is indented under its task's.
func TestRenderSubagentCalls(t *testing.T) {
	var b bytes.Buffer
	r := &render{w: &b, calls: map[string]*chatCallLine{}}
	r.call(chatUpdate{SessionUpdate: "tool_call", ToolCallID: "t1", Title: "Subagent reviewer: read a.md", Status: "in_progress"})
	r.call(chatUpdate{SessionUpdate: "tool_call", ToolCallID: "c1", ParentToolCallID: "t1", Title: "reviewer: Read file", Status: "completed",
		RawInput: json.RawMessage(`{"path":"a.md"}`)})
	r.call(chatUpdate{SessionUpdate: "tool_call_update", ToolCallID: "t1", Status: "completed"})
	want := "  [in_progress] Subagent reviewer: read a.md\n      [completed] reviewer: Read file\n  [completed] Subagent reviewer: read a.md\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// TestPromptInert: a permission prompt shows who asks, the model's words
// labelled as such and inert, Nexus's command a line at a time, and what
// "always" remembers, or that it counts once; the agent's text, thoughts
// and tool call titles are inert too.
func TestPromptInert(t *testing.T) {
	var p permissionRequest
	p.ToolCall.ToolName = "execute_command"
	p.ICERC.Intent = "\x1b[2K\r  command:  go test ./..."
	p.ICERC.ExpectedOutcome = "tests pass\u202e"
	p.ICERC.Command = "ls\nrm -rf src"
	p.ICERC.Risk.Level = "high"
	p.ICERC.Risk.Details = []string{"runs several commands (; && || or new lines)"}
	p.ICERC.Asker = "agent session s1 acting for the person"
	p.ICERC.Always = `allow or reject execute_command "ls" for the person`
	var b bytes.Buffer
	c := &chat{e: &env{}, status: &render{w: &b}, out: &render{w: &b}}
	c.askPrompt(&p)
	want := `Permission needed: execute_command
  asked by: agent session s1 acting for the person
  in the model's words, not checked by Nexus:
    intent:   \x1b[2K\r  command:  go test ./...
    expected: tests pass\u202e
  command:  ls
          | rm -rf src
  risk:     high
            - runs several commands (; && || or new lines)
  always:   allow or reject execute_command "ls" for the person
Allow? [y]es once / [a]lways / [n]o / [N]ever: `
	if b.String() != want {
		t.Errorf("prompt:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	p.ICERC.Always, p.ICERC.Asker = "", ""
	c.askPrompt(&p)
	for _, s := range []string{"  asked by: (not said)\n", "  always:   an \"always\" answer counts once here: nothing is remembered\n"} {
		if !bytes.Contains(b.Bytes(), []byte(s)) {
			t.Errorf("prompt lacks %q:\n%s", s, b.String())
		}
	}

	b.Reset()
	c = &chat{e: &env{}, status: &render{w: &b, calls: map[string]*chatCallLine{}}, out: &render{w: &b}}
	text := func(kind, s string) chatUpdate {
		raw, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		return chatUpdate{SessionUpdate: kind, Content: raw}
	}
	c.show(text("agent_message_chunk", "done\x1b]0;pwned\x07\n"))
	c.show(text("agent_thought_chunk", "think\u009b2K\n"))
	c.show(chatUpdate{SessionUpdate: "tool_call", ToolCallID: "c1", Title: "Run\rrm", Status: "pending", RawInput: json.RawMessage(`{"a":"\u202e"}`)})
	want = "done\\x1b]0;pwned\\x07\nthink\\u009b2K\n  [pending] Run\\rrm\n"
	if b.String() != want {
		t.Errorf("updates: %q, want %q", b.String(), want)
	}
}

// TestPlanText: the agent's plan is a line a step with its mark, counted;
// the model's words are inert (a step cannot forge another line or move
// the cursor); an empty plan says it was cleared.
func TestPlanText(t *testing.T) {
	var up chatUpdate
	if err := json.Unmarshal([]byte(`{"sessionUpdate":"plan","entries":[`+
		`{"content":"Read the notes","priority":"medium","status":"completed"},`+
		`{"content":"Write\n  [x] forged\u001b[2K","priority":"medium","status":"in_progress"},`+
		`{"content":"Run the tests","priority":"medium","status":"pending"},`+
		`{"content":"Odd","priority":"medium","status":"\u202eodd"}]}`), &up); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	c := &chat{e: &env{}, status: &render{w: &b}, out: &render{w: &b}}
	c.show(up)
	want := "Plan (1/4 done):\n  [x] Read the notes\n  [>] Write\\n  [x] forged\\x1b[2K\n  [ ] Run the tests\n  [\\u202eodd] Odd\n"
	if b.String() != want {
		t.Errorf("plan:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	c.show(chatUpdate{SessionUpdate: "plan"})
	if b.String() != "Plan: cleared\n" {
		t.Errorf("empty plan: %q", b.String())
	}
}

// TestRenderCallChanges: a completed call that changed files shows their
// diff under its line, indented, at most maxCallDiffLines lines of it and
// then how many more, inert, coloured only on a terminal.
func TestRenderCallChanges(t *testing.T) {
	var diff strings.Builder
	diff.WriteString("diff --git a/n.txt b/n.txt\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,14 @@\n")
	diff.WriteString("+\x1b[2Khello\n")
	for i := range 13 {
		fmt.Fprintf(&diff, "+line %d\n", i)
	}
	up := chatUpdate{SessionUpdate: "tool_call_update", ToolCallID: "c1", Title: "Wrote n.txt, 100 bytes", Status: "completed",
		Changes:     []tools.ProposedChange{{Path: "n.txt", Action: "added", Diff: diff.String()}, {Path: "b.bin", Action: "modified", Binary: true}},
		MoreChanges: 3}
	for _, tty := range []bool{false, true} {
		var b bytes.Buffer
		r := &render{w: &b, calls: map[string]*chatCallLine{}, tty: tty}
		r.call(chatUpdate{SessionUpdate: "tool_call", ToolCallID: "c1", Title: "Write n.txt", Status: "in_progress"})
		r.call(up)
		r.text("done")
		r.endLine()
		got := b.String()
		if strings.Contains(got, "\x1b[2K") {
			t.Errorf("tty %v: a file's escape reached the terminal:\n%q", tty, got)
		}
		if tty != strings.Contains(got, "\x1b[32m+line 0\x1b[0m") {
			t.Errorf("tty %v: colour:\n%q", tty, got)
		}
		if tty {
			continue
		}
		want := "  [in_progress] Write n.txt\n  [completed] Wrote n.txt, 100 bytes\n" +
			"      change:   added n.txt\n      new file mode 100644\n      --- /dev/null\n      +++ b/n.txt\n      @@ -0,0 +1,14 @@\n      +\\x1b[2Khello\n" +
			"      +line 0\n      +line 1\n      +line 2\n      +line 3\n      +line 4\n      +line 5\n      +line 6\n" +
			"      change:   modified b.bin\n      … 6 more lines\n      … and 3 more files changed\ndone\n"
		if got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	}
	// A call that changed nothing, or failed, shows no diff.
	var b bytes.Buffer
	r := &render{w: &b, calls: map[string]*chatCallLine{}}
	r.call(chatUpdate{SessionUpdate: "tool_call", ToolCallID: "c2", Title: "Read n.txt", Status: "completed"})
	if b.String() != "  [completed] Read n.txt\n" {
		t.Errorf("got %q", b.String())
	}
}
