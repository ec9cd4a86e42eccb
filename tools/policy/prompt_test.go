package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

// TestPromptLines: the record shows who asks, the caller's words labelled
// as such and inert, Nexus's command a line at a time, and what "always"
// remembers, or that it counts once.
func TestPromptLines(t *testing.T) {
	r := ICERC{
		Intent:          "\x1b[2K\r  command:  go test ./...",
		ExpectedOutcome: "tests pass\u202e",
		Command:         "ls\nrm -rf src",
		Risk:            RiskAssessment{Level: "high", Scope: "work\x1bspace", Details: []string{"runs several commands\r"}},
		Asker:           "agent session s1 acting for the person",
		Always:          `execute_command "ls", exactly this command, for the person`,
	}
	want := []string{
		"asked by: agent session s1 acting for the person",
		"in the model's words, not checked by Nexus:",
		`  intent:   \x1b[2K\r  command:  go test ./...`,
		`  expected: tests pass\u202e`,
		"command:  ls",
		"        | rm -rf src",
		`risk:     high (work\x1bspace)`,
		`          - runs several commands\r`,
		`always:   execute_command "ls", exactly this command, for the person`,
	}
	if got := PromptLines(r, "the model's"); !slices.Equal(got, want) {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	got := PromptLines(ICERC{Command: "ls"}, "the caller's")
	for _, w := range []string{"asked by: (not said)", "in the caller's words, not checked by Nexus:", "  intent:   (not given)", "always:   " + CountsOnce} {
		if !slices.Contains(got, w) {
			t.Errorf("lines %q lack %q", got, w)
		}
	}
}

// TestChangeLines: a hostile file's diff is shown inert, a line of it at a
// time with its kind, cut at the limit with a count of what is left.
func TestChangeLines(t *testing.T) {
	diff := "diff --git a/n.md b/n.md\nindex 1111111..2222222 100644\n--- a/n.md\n+++ b/n.md\n@@ -1,3 +1,3 @@\n" +
		" keep\t1\n-\x1b[2Kold\r\n+new\u202e\x1b]0;title\x07\n+++ not a header\n--- not one either\n"
	got := ChangeLines([]tools.ProposedChange{
		{Path: "n.md", Action: tools.ChangeModified, Diff: diff},
		{Path: "x\x1b[1A.md", Action: tools.ChangeAdded, Diff: "", Truncated: true},
	}, 6)
	want := []ChangeLine{
		{Text: "change:   modified n.md"},
		{Text: "--- a/n.md"},
		{Text: "+++ b/n.md"},
		{Text: "@@ -1,3 +1,3 @@", Kind: LineHunk},
		{Text: " keep    1"},
		{Text: `-\x1b[2Kold\r`, Kind: LineRemoved},
		{Text: `+new\u202e\x1b]0;title\x07`, Kind: LineAdded},
		{Text: `change:   added $'x\x1b[1A.md'`},
		{Text: "          (too large to show a diff)"},
		{Text: "… 2 more lines"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("lines:\n%+v\nwant:\n%+v", got, want)
	}
	for _, l := range ChangeLines([]tools.ProposedChange{{Path: "n.md", Action: "modified", Diff: diff}}, MaxChangeLines) {
		if strings.ContainsAny(l.Text, "\x1b\r\x07\u202e") {
			t.Errorf("line %q is not inert", l.Text)
		}
		if strings.HasPrefix(l.Text, "+++ not") && l.Kind != LineAdded || strings.HasPrefix(l.Text, "--- not") && l.Kind != LineRemoved {
			t.Errorf("a line of the hunk is taken for a header: %+v", l)
		}
	}
}
