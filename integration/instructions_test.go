package integration

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// systemOf is the system message and the other messages' text of a
// recorded Chat Completions request.
func systemOf(t *testing.T, body []byte) (system, rest string) {
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
	var others strings.Builder
	for _, m := range req.Messages {
		var text string
		if json.Unmarshal(m.Content, &text) != nil {
			text = string(m.Content)
		}
		if m.Role == "system" {
			system += text
		} else {
			others.WriteString(text + "\n")
		}
	}
	return system, others.String()
}

// TestProjectInstructions: through nexusd and the editor protocol, against
// the scripted model: the root's AGENTS.md is in the system message of the
// first request; once read_file worked in sub/, sub/CLAUDE.md (there is no
// AGENTS.md there) joins it in the next; after /compact the history holds
// the summary and the request still carries both files in its system
// message, never in a summarised turn; /context names them with sizes.
func TestProjectInstructions(t *testing.T) {
	model := &chatModel{answers: []func(io.Writer, func()) error{func(w io.Writer, flush func()) error {
		_, err := io.WriteString(w, chatDelta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"sub/x.txt\"}"}}]}`, "")+chatDelta(`{}`, "tool_calls"))
		return err
	}}}
	e, ws, id := scriptedSession(t, model, "read_file")
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ws, map[string]string{"AGENTS.md": "ROOT-RULE: answer in French.", "sub/CLAUDE.md": "SUB-RULE: tabs.", "sub/x.txt": "x"})
	var res promptResult
	e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "Read sub/x.txt."}, &res)
	reqs := model.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (the call, its result)", len(reqs))
	}
	if s, _ := systemOf(t, reqs[0]); !strings.Contains(s, "## AGENTS.md\n\nROOT-RULE: answer in French.") || strings.Contains(s, "SUB-RULE") {
		t.Errorf("first request's system message:\n%s", s)
	}
	if s, _ := systemOf(t, reqs[1]); !strings.Contains(s, "ROOT-RULE") || !strings.Contains(s, "## sub/CLAUDE.md\n\nSUB-RULE: tabs.") {
		t.Errorf("after read_file in sub/, the system message:\n%s", s)
	}
	for _, p := range []string{"One more turn.", "/compact", "After the compaction."} {
		e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": p}, &res)
	}
	reqs = model.requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	summary, _ := systemOf(t, reqs[3])
	after, rest := systemOf(t, reqs[4])
	for i, s := range []string{summary, after} {
		if !strings.Contains(s, "ROOT-RULE") || !strings.Contains(s, "SUB-RULE") {
			t.Errorf("request %d lost the instructions:\n%s", i+4, s)
		}
	}
	if !strings.Contains(rest, "[Summary of the earlier conversation]") || strings.Contains(rest, "RULE") {
		t.Errorf("the request after /compact: no summary, or instructions in its turns:\n%s", rest)
	}
	e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "/context"}, &res)
	e.await("/context", 30*time.Second, func() bool {
		out := commandText(e, id)
		return strings.Contains(out, "AGENTS.md                                28 bytes") &&
			strings.Contains(out, "sub/CLAUDE.md                            15 bytes") && strings.Contains(out, "directories worked in (sub)")
	})
}
