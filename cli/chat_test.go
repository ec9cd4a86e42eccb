package cli

import (
	"bytes"
	"encoding/json"
	"testing"
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

// TestRenderCalls: a tool call is one line rewritten in place on a
// terminal while it is the last line, and a line per status otherwise;
// text between ends the line.
func TestRenderCalls(t *testing.T) {
	up := func(kind, status, text string) chatUpdate {
		u := chatUpdate{SessionUpdate: kind, ToolCallID: "c1", Title: "Read file", Status: status, RawInput: json.RawMessage(`{"path": "a.md"}`)}
		if text != "" {
			u.Content = json.RawMessage(`[{"type":"content","content":{"type":"text","text":"` + text + `"}}]`)
		}
		return u
	}
	for _, c := range []struct {
		tty  bool
		want string
	}{
		{true, "  [pending] Read file {\"path\":\"a.md\"}\r\x1b[K  [in_progress] Read file {\"path\":\"a.md\"}\r\x1b[K  [failed] Read file {\"path\":\"a.md\"}: permission_denied: no\nok\n"},
		{false, "  [pending] Read file {\"path\":\"a.md\"}\n  [in_progress] Read file {\"path\":\"a.md\"}\n  [failed] Read file {\"path\":\"a.md\"}: permission_denied: no\nok\n"},
	} {
		var b bytes.Buffer
		r := &render{w: &b, tty: c.tty, calls: map[string]*chatCallLine{}}
		r.call(up("tool_call", "pending", ""))
		r.call(up("tool_call_update", "in_progress", ""))
		r.call(up("tool_call_update", "failed", "permission_denied: no"))
		r.text("ok")
		r.endLine()
		if b.String() != c.want {
			t.Errorf("tty %v:\n%q\nwant\n%q", c.tty, b.String(), c.want)
		}
	}
}
