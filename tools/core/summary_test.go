package core

import (
	"encoding/json"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

func TestSummary(t *testing.T) {
	done := func(tool, args, result string) tools.Call {
		return tools.Call{ToolName: tool, ArgumentsJSON: json.RawMessage(args), ResultJSON: json.RawMessage(result), Status: tools.StatusCompleted}
	}
	running := func(tool, args string) tools.Call {
		return tools.Call{ToolName: tool, ArgumentsJSON: json.RawMessage(args), Status: tools.StatusRunning}
	}
	failed := func(tool, args, code, msg string) tools.Call {
		return tools.Call{ToolName: tool, ArgumentsJSON: json.RawMessage(args), Status: tools.StatusError, Error: &tools.CallError{Code: code, Message: msg}}
	}
	for _, tc := range []struct {
		name string
		call tools.Call
		want string
	}{
		{"write waits", running("write_file", `{"path":"notes.txt","content":"hello"}`), "Write notes.txt"},
		{"write", done("write_file", `{"path":"notes.txt","content":"hello"}`, `{"path":"notes.txt","bytesWritten":5,"created":true}`), "Wrote notes.txt, 5 bytes"},
		{"write one byte", done("write_file", `{"path":"a","content":"x"}`, `{"path":"a","bytesWritten":1}`), "Wrote a, 1 byte"},
		{"read whole", done("read_file", `{"path":"main.go"}`, `{"content":"…","totalLines":120,"startLine":1,"endLine":120}`), "Read main.go, 120 lines"},
		{"read range", done("read_file", `{"path":"main.go","startLine":10,"endLine":40}`, `{"content":"…","totalLines":120,"startLine":10,"endLine":40}`), "Read main.go, lines 10–40 of 120"},
		{"read empty", done("read_file", `{"path":"e"}`, `{"content":"","totalLines":0,"startLine":0,"endLine":0}`), "Read e, 0 lines"},
		{"edit", done("edit_file", `{"path":"a.go","oldText":"x","newText":"y"}`, `{"path":"a.go","replacements":2}`), "Edited a.go, 2 replacements"},
		{"inert", done("write_file", `{"path":"a\u202e\u001b[2J.txt","content":"x"}`, `{"bytesWritten":1}`), `Wrote a\u202e\x1b[2J.txt, 1 byte`},
		{"run", done("execute_command", `{"command":"go test ./..."}`, `{"exitCode":0,"stdout":"ok\nok\n","stderr":"warn","durationMs":3}`), "Ran `go test ./...`: exit 0, 3 lines"},
		{"run argv", done("execute_command", `{"argv":["ls","-l"]}`, `{"exitCode":2,"stdout":"","stderr":""}`), "Ran `ls -l`: exit 2, 0 lines"},
		{"run timed out", done("execute_command", `{"command":"sleep 9"}`, `{"exitCode":-1,"timedOut":true,"stdout":"","stderr":""}`), "Ran `sleep 9`: timed out, 0 lines"},
		{"run multi-line", running("execute_command", `{"command":"echo a\nrm -rf x"}`), "Run `echo a …`"},
		{"list", done("list_directory", `{"path":"src"}`, `{"entries":[{"name":"a"},{"name":"b"}]}`), "Listed src, 2 entries"},
		{"list root", done("list_directory", `{"recursive":true}`, `{"entries":[{"name":"a"}]}`), "Listed . recursively, 1 entry"},
		{"search", done("search_files", `{"pattern":"foo"}`, `{"matches":[{"path":"a","line":1},{"path":"a","line":2},{"path":"b","line":3}],"truncated":false}`), `Searched for "foo": 3 matches`},
		{"search under", done("search_files", `{"pattern":"foo","path":"src","glob":"*.go"}`, `{"matches":[],"truncated":false}`), `Searched for "foo" in *.go under src: 0 matches`},
		{"time", done("get_current_time", `{}`, `{"iso8601":"2026-11-28T13:00:00Z","unix":1,"timezone":"UTC"}`), "Got the time: 2026-11-28T13:00:00Z"},
		{"declined", failed("write_file", `{"path":"notes.txt","content":"x"}`, tools.CodePermissionDenied, "rejected by the person"), "Write notes.txt: declined (rejected by the person)"},
		{"failed", failed("read_file", `{"path":"gone.txt"}`, tools.CodeExecutionFailed, "open gone.txt: no such file\nmore"), "Read gone.txt: failed (open gone.txt: no such file …)"},
		{"cancelled", failed("write_file", `{"path":"notes.txt","content":"x"}`, tools.CodeCancelled, "the call was cancelled while waiting for permission"), "Write notes.txt: cancelled"},
		{"mcp", tools.Call{ToolName: "create_issue", ServerName: "github", ArgumentsJSON: json.RawMessage(`{"path":"x"}`), ResultJSON: json.RawMessage(`{}`), Status: tools.StatusCompleted}, "Called github/create_issue"},
		{"mcp waits", tools.Call{ToolName: "create_issue", ServerName: "github", Status: tools.StatusInitiated}, "Call github/create_issue"},
		{"result cut", tools.Call{ToolName: "read_file", ArgumentsJSON: json.RawMessage(`{"path":"big"}`), ResultJSON: json.RawMessage(`"{\"content\":"`), ResultTruncated: true, Status: tools.StatusCompleted}, "Read big: done"},
		{"arguments cut", tools.Call{ToolName: "write_file", ArgumentsJSON: json.RawMessage(`"{\"path\":"`), ArgumentsTruncated: true, Status: tools.StatusRunning}, "Call write_file"},
		{"long path", running("read_file", `{"path":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`), "Read aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…"},
	} {
		if got := Summary(tc.call); got != tc.want {
			t.Errorf("%s: Summary = %q, want %q", tc.name, got, tc.want)
		}
	}
}
