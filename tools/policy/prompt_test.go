package policy

import (
	"slices"
	"strings"
	"testing"
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
