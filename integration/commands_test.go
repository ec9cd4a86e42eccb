package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// lastUserText is the text of the last user message of a chat completions
// request body.
func lastUserText(t *testing.T, body []byte) string {
	t.Helper()
	return lastText(t, body, "user")
}

// lastText is the text of the last message of role of a chat completions
// request body ("tool": what the model got of its last call).
func lastText(t *testing.T, body []byte, role string) string {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request %s: %v", body, err)
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != role {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s
		}
		var parts []struct {
			Text string `json:"text"`
		}
		json.Unmarshal(m.Content, &parts)
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// TestCommandFromFile: /review from commands/review.md of the definitions
// root sends its text, the arguments in place, as the person's prompt; /help
// lists it with its file and revision; the editor's sessions/new lists it.
func TestCommandFromFile(t *testing.T) {
	model := startScriptedModel(t)
	ws := newWorkspace(t, model.config())
	defs := filepath.Join(ws, ".nexus", "definitions", "commands")
	if err := os.MkdirAll(defs, 0o755); err != nil {
		t.Fatal(err)
	}
	review := "---\ndescription: Review a file for bugs\nargument-hint: FILE\n---\nReview $1 for bugs, then say what you found.\n"
	if err := os.WriteFile(filepath.Join(defs, "review.md"), []byte(review), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, ws)

	out, errOut, code := nexus(t, ws, "", "chat", "-p", "/review main.go")
	if code != 0 {
		t.Fatalf("nexus chat -p /review: exit %d\n%s%s", code, out, errOut)
	}
	bodies := model.requestBodies()
	if len(bodies) != 1 {
		t.Fatalf("/review made %d model requests, want 1", len(bodies))
	}
	if got := lastUserText(t, bodies[0]); got != "Review main.go for bugs, then say what you found." {
		t.Errorf("/review sent %q", got)
	}
	if !strings.Contains(out+errOut, "the text of commands/review.md @ ") {
		t.Errorf("/review did not say which file it sends:\n%s%s", out, errOut)
	}

	out, errOut, code = nexus(t, ws, "", "chat", "-p", "/help")
	if code != 0 || !regexp.MustCompile(`/review    Review a file for bugs  \(commands/review\.md @ [0-9a-f]{7} by [^)]+\)`).MatchString(out) {
		t.Errorf("/help: exit %d\n%s%s", code, out, errOut)
	}

	d.stop() // the editor's nexusd is the workspace's daemon now
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	type command struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	var res struct {
		Commands []command `json:"availableCommands"`
	}
	e.mustCall("nexus/agent/sessions/new", map[string]any{}, &res)
	if !slices.Contains(res.Commands, command{"review", "Review a file for bugs"}) {
		t.Errorf("sessions/new lists %+v, want review", res.Commands)
	}
}
