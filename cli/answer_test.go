package cli

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

// TestChangeTextInert: a diff whose file holds terminal sequences and
// bidi characters is shown inert; on a terminal the only sequences are
// Nexus's own colours, one around each +, - or @@ line; the diff is cut at
// policy.MaxChangeLines lines with a count of the rest.
func TestChangeTextInert(t *testing.T) {
	var body strings.Builder
	body.WriteString("diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1,2 +1,60 @@\n-\x1b[2K\x1b[1A  command:  ls\r\n")
	for range 60 {
		body.WriteString("+\x1b]0;pwned\x07\u202e\x9b31m evil\n")
	}
	changes := []tools.ProposedChange{{Path: "x", Action: tools.ChangeModified, Diff: body.String()}}

	plain := changeText(changes, false)
	if strings.ContainsAny(plain, "\x1b\x07\r\u202e\u009b") {
		t.Errorf("not inert without colour:\n%q", plain)
	}
	coloured := changeText(changes, true)
	own := regexp.MustCompile(`^  (?:\x1b\[3[126]m[^\x1b]*\x1b\[0m|[^\x1b]*)$`)
	lines := strings.Split(strings.TrimSuffix(coloured, "\n"), "\n")
	for _, l := range lines {
		if !own.MatchString(l) || strings.ContainsAny(l, "\x07\r\u202e\u009b") {
			t.Errorf("line %q has a sequence that is not Nexus's colour", l)
		}
	}
	for _, want := range []string{"  \x1b[31m-\\x1b[2K\\x1b[1A  command:  ls\\r\x1b[0m", "  \x1b[36m@@ -1,2 +1,60 @@\x1b[0m", "  … 24 more lines"} {
		if !strings.Contains(coloured, want+"\n") {
			t.Errorf("no line %q in:\n%s", want, coloured)
		}
	}
	if n := strings.Count(coloured, "\x1b[32m"); n != 36 {
		t.Errorf("%d added lines shown, want 36: 40 lines of diff in all, with the headers", n)
	}
}

// TestChatPromptShowsTheDiff: nexus chat's permission prompt shows the
// change under the record, coloured on a terminal, its content inert.
func TestChatPromptShowsTheDiff(t *testing.T) {
	var p permissionRequest
	if err := json.Unmarshal([]byte(`{"requestId":"r1","toolCall":{"toolName":"write_file"},"icerc":{"command":"write_file notes.md (4 bytes)",
		"changes":[{"path":"notes.md","action":"modified","diff":"diff --git a/notes.md b/notes.md\n--- a/notes.md\n+++ b/notes.md\n@@ -1 +1 @@\n-old\n+new\u001b[2K\n","before":"old\n","after":"new\u001b[2K\n"}]}}`), &p); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	c := &chat{e: &env{}, status: &render{w: &b, tty: true}, out: &render{w: &b}}
	c.askPrompt(&p)
	want := "  change:   modified notes.md\n  --- a/notes.md\n  +++ b/notes.md\n  \x1b[36m@@ -1 +1 @@\x1b[0m\n  \x1b[31m-old\x1b[0m\n" +
		"  \x1b[32m+new\\x1b[2K\x1b[0m\nAllow? [y]es once / [a]lways / [n]o / [N]ever: "
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("prompt:\n%q\nwant it to end with:\n%q", b.String(), want)
	}
}
