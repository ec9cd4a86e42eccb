package acp

import (
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

// TestICERCTextInert: the text of session/request_permission shows who
// asks, the model's words labelled as such and inert (an ESC, a CR or a
// bidi override is shown escaped), Nexus's command, and what "always"
// remembers, or that it counts once.
func TestICERCTextInert(t *testing.T) {
	r := tools.ICERC{
		Intent:          "\x1b[2K\rcommand:  go test ./...",
		ExpectedOutcome: "tests pass\u202e",
		Command:         "rm -rf src",
		Risk:            tools.RiskAssessment{Level: "high"},
		Asker:           "agent session s1 acting for the person",
	}
	want := "```text\n" +
		"asked by: agent session s1 acting for the person\n" +
		"in the model's words, not checked by Nexus:\n" +
		`  intent:   \x1b[2K\rcommand:  go test ./...` + "\n" +
		`  expected: tests pass\u202e` + "\n" +
		"command:  rm -rf src\n" +
		"risk:     high\n" +
		`always:   an "always" answer counts once here: nothing is remembered` + "\n```"
	if got := icercText(r); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
	r.Always = `execute_command "rm -rf src", exactly this command, for the person`
	if got := icercText(r); !strings.HasSuffix(got, "\nalways:   "+r.Always+"\n```") {
		t.Errorf("text %q does not say what always remembers", got)
	}
	// Backticks in the model's words cannot end the code block.
	r.Intent = "```\n[click](https://evil.example)"
	if got := icercText(r); !strings.HasPrefix(got, "````text\n") || !strings.HasSuffix(got, "\n````") {
		t.Errorf("text %q: its fence is not longer than the intent's backticks", got)
	}
}
