package cli

import (
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
