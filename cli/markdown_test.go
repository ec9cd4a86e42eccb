package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/internal/inert"
)

// TestTermMarkdown: on a terminal the answer's markdown is rendered a line
// at a time — headings and **bold** bold, `code` and code blocks cyan (the
// blocks indented), bullets as •, links and workspace paths as OSC 8
// hyperlinks (a web page, a file of the workspace; no link out of it) — and
// what the model wrote can add no escape of its own.
func TestTermMarkdown(t *testing.T) {
	m := &termMarkdown{root: "/ws"}
	var out strings.Builder
	for _, chunk := range []string{"# Do", "ne\n\nI read **src/main.go** and `notes.txt`, see src/main.go:7 ", "and [docs](https://example.com/a) or [up](../x.go).\n",
		"- one *two*\n> quoted\n```go\nfunc main() {}\n```\nsnake_case_name e.g. v1.2 /etc/passwd:3\nlast"} {
		out.WriteString(m.write(chunk))
	}
	out.WriteString(m.flush())
	link := func(href, text string) string { return "\x1b]8;;" + href + "\x1b\\" + text + "\x1b]8;;\x1b\\" }
	want := "\x1b[1mDone\x1b[0m\n" +
		"\n" +
		"I read \x1b[1msrc/main.go\x1b[0m and \x1b[36m" + link("file:///ws/notes.txt", "notes.txt") + "\x1b[0m, see " + link("file:///ws/src/main.go", "src/main.go:7") + " " +
		"and " + link("https://example.com/a", "docs") + " or up.\n" +
		"• one \x1b[3mtwo\x1b[0m\n" +
		"\x1b[2m│ \x1b[0mquoted\n" +
		"\x1b[2m    go\x1b[0m\n" +
		"    \x1b[36mfunc main() {}\x1b[0m\n" +
		"\x1b[2m    \x1b[0m\n" +
		"snake_case_name e.g. v1.2 /etc/passwd:3\n" +
		"last"
	if got := out.String(); got != want {
		t.Errorf("rendered:\n%q\nwant\n%q", got, want)
	}

	// Inert first: the model's escapes are shown, never sent.
	m = &termMarkdown{root: "/ws"}
	got := m.write(inert.Text("**x\x1b]8;;file:///etc/passwd\x07y** [a](https://e.com/\x1b[2J)\n"))
	if strings.Count(got, "\x1b]8;;") != 2 || strings.Contains(got, "\x07") || strings.Contains(got, "\x1b[2J") || !strings.Contains(got, `\x1b]8;;file:///etc/passwd\x07y`) {
		t.Errorf("a model's escape reached the terminal: %q", got)
	}
	// Without a workspace, no file links.
	if got := (&termMarkdown{}).write("see a.go:3\n"); got != "see a.go:3\n" {
		t.Errorf("no root: %q", got)
	}
}

// TestChatAnswerMarkdown: nexus chat renders the answer's markdown on a
// terminal, and writes it as it comes elsewhere; a tool call's line ends
// the answer's unfinished line, rendered.
func TestChatAnswerMarkdown(t *testing.T) {
	text := func(s string) chatUpdate {
		raw, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		return chatUpdate{SessionUpdate: "agent_message_chunk", Content: raw}
	}
	for _, tty := range []bool{false, true} {
		var b bytes.Buffer
		r := &render{w: &b, tty: tty, calls: map[string]*chatCallLine{}}
		if tty {
			r.md = &termMarkdown{root: "/ws"}
		}
		c := &chat{e: &env{}, status: r, out: r}
		c.show(text("**Bold** li"))
		c.show(text("ne\nand **more**"))
		c.show(chatUpdate{SessionUpdate: "tool_call", ToolCallID: "c1", Title: "Read a.md", Status: "pending"})
		c.show(text("Done."))
		c.out.endLine()
		want := "**Bold** line\nand **more**\n  [pending] Read a.md\nDone.\n"
		if tty {
			want = "\x1b[1mBold\x1b[0m line\nand \x1b[1mmore\x1b[0m\n  [pending] Read a.md\nDone.\n"
		}
		if b.String() != want {
			t.Errorf("tty %v:\n%q\nwant\n%q", tty, b.String(), want)
		}
	}
}

// TestCallLineLink: on a terminal, the file of a tool call's line is a
// hyperlink to it; a path out of the workspace is not.
func TestCallLineLink(t *testing.T) {
	var b bytes.Buffer
	r := &render{w: &b, tty: true, calls: map[string]*chatCallLine{}, md: &termMarkdown{root: "/ws"}}
	var up chatUpdate
	if err := json.Unmarshal([]byte(`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Wrote notes.txt, 5 bytes","status":"completed","locations":[{"path":"notes.txt"}]}`), &up); err != nil {
		t.Fatal(err)
	}
	r.call(up)
	up.ToolCallID, up.Title, up.Locations[0].Path = "c2", "Read ../x.txt, 1 line", "../x.txt"
	r.call(up)
	want := "  [completed] Wrote \x1b]8;;file:///ws/notes.txt\x1b\\notes.txt\x1b]8;;\x1b\\, 5 bytes\n  [completed] Read ../x.txt, 1 line\n"
	if b.String() != want {
		t.Errorf("lines:\n%q\nwant\n%q", b.String(), want)
	}
}
