package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/command"
)

// fakeFiles is an editor's files: its buffers by absolute path.
type fakeFiles struct {
	mu    sync.Mutex
	files map[string]string
	calls []string // "read PATH", "write PATH"
	err   error    // every call fails with it, when set
	// during, when set, runs in each call, as if the editor took its time.
	during func(path string)
}

func (f *fakeFiles) ReadTextFile(_ context.Context, path string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "read "+path)
	if f.during != nil {
		f.during(path)
	}
	if f.err != nil {
		return "", f.err
	}
	text, ok := f.files[path]
	if !ok {
		return "", fmt.Errorf("no buffer or file %s", path)
	}
	return text, nil
}

func (f *fakeFiles) WriteTextFile(_ context.Context, path, content string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "write "+path)
	if f.err != nil {
		return f.err
	}
	f.files[path] = content
	return nil
}

func (f *fakeFiles) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := f.calls
	f.calls = nil
	return calls
}

// clientEnv is a workspace whose calls come from an editor's session with
// the files cf, acting for the person.
func clientEnv(t *testing.T, opts ...envOption) (*env, *fakeFiles, string) {
	e := newEnv(t, opts...)
	e.inv = &tools.Invocation{CallID: "c1", Party: access.Person("editor").Agent("s1")}
	real, err := filepath.EvalSymlinks(e.ws)
	if err != nil {
		t.Fatal(err)
	}
	return e, &fakeFiles{files: map[string]string{}}, real
}

// callWith runs a tool with ctx, and checks a result against its output
// schema.
func (e *env) callWith(ctx context.Context, name string, args any) (json.RawMessage, error) {
	e.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	tl := e.byName[name]
	out, err := tl.Handler(ctx, e.inv, raw)
	if err == nil {
		checkAgainst(e.t, tl.OutputSchema, out)
	}
	return out, err
}

func TestReadFileThroughTheEditor(t *testing.T) {
	e, cf, real := clientEnv(t, func(c *Config) { c.ReadLimit = 64 })
	ctx := tools.WithClientFiles(context.Background(), cf)
	e.file("a.txt", "on disk\n")
	cf.files[filepath.Join(real, "a.txt")] = "one\ntwo\nthree\n" // unsaved
	cf.files[filepath.Join(real, "new", "unsaved.txt")] = "not on disk yet\n"
	cf.files[filepath.Join(real, "fresh.txt")] = "fresh\n"
	e.file("big.txt", "x")
	cf.files[filepath.Join(real, "big.txt")] = strings.Repeat("line\n", 20)
	e.file("bin.txt", "x")
	cf.files[filepath.Join(real, "bin.txt")] = "a\x00b\n"
	e.symlink("a.txt", "link.txt")
	e.file(".nexus/definitions/d.yaml", "k: disk\n")
	cf.files[filepath.Join(real, ".nexus", "definitions", "d.yaml")] = "k: editor\n"
	e.file("hard.txt", "x")
	if err := os.Link(filepath.Join(e.ws, "hard.txt"), filepath.Join(e.ws, "hard2.txt")); err != nil {
		t.Fatal(err)
	}
	e.symlink(".nexus/run/admin.token", "tok-link")
	e.symlink("../outside/secret.txt", "out-link")
	e.file("sub/inner.txt", "inner\n")

	tests := []struct {
		name      string
		args      map[string]any
		want      readResult
		asked     string // the path the editor is asked about, relative to the real root
		code, msg string
	}{
		{"unsaved buffer", map[string]any{"path": "a.txt"}, readResult{Content: "one\ntwo\nthree\n", TotalLines: 3, StartLine: 1, EndLine: 3}, "a.txt", "", ""},
		{"line range", map[string]any{"path": "a.txt", "startLine": 2, "endLine": 2}, readResult{Content: "two\n", TotalLines: 3, StartLine: 2, EndLine: 2}, "a.txt", "", ""},
		{"through a symlink: the canonical path", map[string]any{"path": "link.txt", "endLine": 1}, readResult{Content: "one\n", TotalLines: 3, StartLine: 1, EndLine: 1}, "a.txt", "", ""},
		{"a new buffer, not on disk", map[string]any{"path": "fresh.txt"}, readResult{Content: "fresh\n", TotalLines: 1, StartLine: 1, EndLine: 1}, "fresh.txt", "", ""},
		{"in a directory not on disk", map[string]any{"path": "new/unsaved.txt"}, readResult{Content: "not on disk yet\n", TotalLines: 1, StartLine: 1, EndLine: 1}, "new/unsaved.txt", "", ""},
		{"over the read limit", map[string]any{"path": "big.txt"}, readResult{}, "big.txt", tools.CodeOutputLimit, "startLine and endLine"},
		{"a range of a big one", map[string]any{"path": "big.txt", "startLine": 19}, readResult{Content: "line\nline\n", TotalLines: 20, StartLine: 19, EndLine: 20}, "big.txt", "", ""},
		{"binary", map[string]any{"path": "bin.txt"}, readResult{}, "bin.txt", tools.CodeInvalidArguments, "binary"},
		{"the editor has nothing", map[string]any{"path": "nope.txt"}, readResult{}, "nope.txt", tools.CodeExecutionFailed, `read "nope.txt": the editor failed`},
		// Definition files are read from disk, never the editor.
		{"definition file", map[string]any{"path": ".nexus/definitions/d.yaml"}, readResult{Content: "k: disk\n", TotalLines: 1, StartLine: 1, EndLine: 1}, "", "", ""},
		// Every check before the editor is asked.
		{"private state", map[string]any{"path": ".nexus/run/admin.token"}, readResult{}, "", tools.CodeInvalidArguments, ".nexus/"},
		{"private through a symlink", map[string]any{"path": "tok-link"}, readResult{}, "", tools.CodeInvalidArguments, ".nexus/"},
		{"outside through a symlink", map[string]any{"path": "out-link"}, readResult{}, "", tools.CodeInvalidArguments, "outside the workspace"},
		{"climbing out", map[string]any{"path": "../outside/secret.txt"}, readResult{}, "", tools.CodeInvalidArguments, `".."`},
		{"absolute", map[string]any{"path": filepath.Join(e.outside, "secret.txt")}, readResult{}, "", tools.CodeInvalidArguments, "absolute"},
		{"hard link", map[string]any{"path": "hard.txt"}, readResult{}, "", tools.CodePermissionDenied, "hard links"},
		{"directory", map[string]any{"path": "sub"}, readResult{}, "", tools.CodeInvalidArguments, "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			out, err := e.callWith(ctx, "read_file", tt.args)
			calls := cf.took()
			if tt.asked == "" && len(calls) != 0 {
				t.Errorf("the editor was asked: %v", calls)
			}
			if tt.asked != "" && (len(calls) == 0 || calls[0] != "read "+filepath.Join(real, tt.asked)) {
				t.Errorf("the editor was asked %v; want read of %s", calls, filepath.Join(real, tt.asked))
			}
			if tt.code != "" {
				wantCode(t, err, tt.code, tt.msg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got readResult
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	e.t = t
	// A symlink swapped in while the editor reads: its text is not
	// returned (the editor read a file Nexus would not have).
	cf.files[filepath.Join(real, "swap.txt")] = "the token"
	e.file("swap.txt", "x")
	cf.during = func(string) {
		os.Remove(filepath.Join(e.ws, "swap.txt"))
		os.Symlink(".nexus/run/admin.token", filepath.Join(e.ws, "swap.txt"))
	}
	out, err := e.callWith(ctx, "read_file", map[string]any{"path": "swap.txt"})
	wantCode(t, err, tools.CodeInvalidArguments, "symlink")
	if strings.Contains(string(out), "token") {
		t.Fatalf("read %s", out)
	}
	cf.during = nil
	// The editor's failure names the path and the editor.
	cf.err = errors.New("connection lost")
	_, err = e.callWith(ctx, "read_file", map[string]any{"path": "a.txt"})
	wantCode(t, err, tools.CodeExecutionFailed, `"a.txt"`, "the editor failed", "connection lost")
	// Without files in the context, the disk is read.
	out, err = e.callWith(context.Background(), "read_file", map[string]any{"path": "a.txt"})
	if err != nil || !strings.Contains(string(out), "on disk") {
		t.Fatalf("without an editor: %s %v", out, err)
	}
}

func TestWriteAndEditThroughTheEditor(t *testing.T) {
	e, cf, real := clientEnv(t)
	ctx := tools.WithClientFiles(context.Background(), cf)
	e.file("a.txt", "on disk\n")
	e.file(".nexus/definitions/d.yaml", "k: v\n")
	e.symlink("../outside", "out-dir")
	before := snapshot(t, e.ws, e.outside)

	var w writeResult
	write := func(p, content string) error {
		t.Helper()
		out, err := e.callWith(ctx, "write_file", map[string]any{"path": p, "content": content})
		if err == nil {
			json.Unmarshal(out, &w)
		}
		return err
	}
	// An existing file: created false; the write lands in the editor.
	if err := write("a.txt", "from the agent\n"); err != nil || w.Created || w.BytesWritten != 15 {
		t.Fatalf("write a.txt: %+v %v", w, err)
	}
	if got := cf.files[filepath.Join(real, "a.txt")]; got != "from the agent\n" {
		t.Errorf("the editor has %q", got)
	}
	if e.read("a.txt") != "on disk\n" {
		t.Error("the disk was written, not the editor")
	}
	// A new file in new directories: created true, the directories made.
	if err := write("sub/dir/new.txt", "new\n"); err != nil || !w.Created {
		t.Fatalf("write new: %+v %v", w, err)
	}
	if fi, err := os.Stat(filepath.Join(e.ws, "sub", "dir")); err != nil || !fi.IsDir() {
		t.Errorf("parent directories: %v", err)
	}
	if calls := cf.took(); !slices.Equal(calls, []string{"write " + filepath.Join(real, "a.txt"), "write " + filepath.Join(real, "sub", "dir", "new.txt")}) {
		t.Errorf("editor calls %v", calls)
	}
	// Definition files go to the store and its history, never the editor.
	if err := write(".nexus/definitions/d.yaml", "k: w\n"); err != nil || w.Revision == "" {
		t.Fatalf("write definition: %+v %v", w, err)
	}
	if got, err := e.defs.Get("d.yaml", ""); err != nil || string(got.Content) != "k: w\n" {
		t.Errorf("definition: %v %v", got, err)
	}
	// Refused before the editor hears of them.
	wantCode(t, write(".nexus/run/admin.token", "x"), tools.CodeInvalidArguments, ".nexus/")
	wantCode(t, write("../outside/secret.txt", "x"), tools.CodeInvalidArguments, `".."`)
	wantCode(t, write("out-dir/x.txt", "x"), tools.CodeInvalidArguments, "outside the workspace")
	if calls := cf.took(); len(calls) != 0 {
		t.Errorf("the editor was asked: %v", calls)
	}

	// edit_file reads the editor's text and writes it back there.
	cf.files[filepath.Join(real, "a.txt")] = "alpha\nbeta\n"
	var ed editResult
	out, err := e.callWith(ctx, "edit_file", map[string]any{"path": "a.txt", "oldText": "beta", "newText": "gamma"})
	if err != nil || json.Unmarshal(out, &ed) != nil || ed.Replacements != 1 {
		t.Fatalf("edit: %s %v", out, err)
	}
	if got := cf.files[filepath.Join(real, "a.txt")]; got != "alpha\ngamma\n" {
		t.Errorf("after the edit the editor has %q", got)
	}
	if calls := cf.took(); !slices.Equal(calls, []string{"read " + filepath.Join(real, "a.txt"), "write " + filepath.Join(real, "a.txt")}) {
		t.Errorf("editor calls %v", calls)
	}
	_, err = e.callWith(ctx, "edit_file", map[string]any{"path": "a.txt", "oldText": "delta", "newText": "x"})
	wantCode(t, err, tools.CodeInvalidArguments, "not found")
	cf.files[filepath.Join(real, "a.txt")] = strings.Repeat("x", maxEditFileSize+1)
	_, err = e.callWith(ctx, "edit_file", map[string]any{"path": "a.txt", "oldText": "x", "newText": "y"})
	wantCode(t, err, tools.CodeInvalidArguments, "edits files up to")
	cf.took()
	// A definition file is edited in the store.
	out, err = e.callWith(ctx, "edit_file", map[string]any{"path": ".nexus/definitions/d.yaml", "oldText": "w", "newText": "z"})
	if err != nil || json.Unmarshal(out, &ed) != nil || ed.Revision == "" {
		t.Fatalf("edit definition: %s %v", out, err)
	}
	if calls := cf.took(); len(calls) != 0 {
		t.Errorf("the editor was asked about a definition: %v", calls)
	}
	// The editor's failure.
	cf.err = errors.New("buffer is read-only")
	wantCode(t, write("a.txt", "x"), tools.CodeExecutionFailed, `write "a.txt": the editor failed: buffer is read-only`)
	_, err = e.callWith(ctx, "edit_file", map[string]any{"path": "a.txt", "oldText": "x", "newText": "y"})
	wantCode(t, err, tools.CodeExecutionFailed, `read "a.txt": the editor failed`)

	// Nothing on disk changed but the new directories and the definition.
	after := snapshot(t, e.ws, e.outside)
	for k, v := range after {
		if before[k] != v && !strings.Contains(k, ".nexus") && !strings.Contains(k, "sub") {
			t.Errorf("%s changed on disk", k)
		}
	}
}

// fakeTerminal is an editor's terminal: it records the command and
// answers with res, or err.
type fakeTerminal struct {
	mu  sync.Mutex
	got []tools.TerminalCommand
	res tools.TerminalResult
	err error
	// hang, when set, makes Run wait until ctx ends, once it said so on
	// hang.
	hang chan struct{}
}

func (f *fakeTerminal) Run(ctx context.Context, cmd tools.TerminalCommand) (tools.TerminalResult, error) {
	f.mu.Lock()
	f.got = append(f.got, cmd)
	res, err, hang := f.res, f.err, f.hang
	f.mu.Unlock()
	if hang != nil {
		close(hang)
		<-ctx.Done()
		return tools.TerminalResult{}, ctx.Err()
	}
	return res, err
}

func (f *fakeTerminal) took() []tools.TerminalCommand {
	f.mu.Lock()
	defer f.mu.Unlock()
	got := f.got
	f.got = nil
	return got
}

func TestExecuteInTheEditorsTerminal(t *testing.T) {
	e, _, real := clientEnv(t)
	e.file("sub/x.txt", "x")
	e.symlink("../outside", "out")
	exec := e.core.ExecuteCommand(ExecConfig{Mode: command.WorkspaceWrite, EnvAllowlist: []string{"PATH"},
		Timeout: 5 * time.Second, MaxTimeout: time.Minute, OutputLimit: 100,
		Getenv: func(string) (string, bool) { return "/secret/bin", true }})
	e.byName["execute_command"] = exec
	term := &fakeTerminal{}
	ctx := tools.WithClientTerminal(context.Background(), term)
	zero, nine := 0, 9

	type result struct {
		ExitCode   int    `json:"exitCode"`
		Signal     string `json:"signal"`
		Stdout     string `json:"stdout"`
		Stderr     string `json:"stderr"`
		Truncated  bool   `json:"truncated"`
		TimedOut   bool   `json:"timedOut"`
		DurationMs *int64 `json:"durationMs"`
	}
	tests := []struct {
		name      string
		args      map[string]any
		res       tools.TerminalResult
		termErr   error
		want      *tools.TerminalCommand // nil: the terminal is not used
		result    result
		code, msg string
	}{
		{"a command line", map[string]any{"command": "echo hi | wc -c", "env": map[string]string{"A": "1"}},
			tools.TerminalResult{Output: "3\n", ExitCode: &zero}, nil,
			&tools.TerminalCommand{Command: "/bin/sh", Args: []string{"-c", "echo hi | wc -c"}, Cwd: real, Env: map[string]string{"A": "1"}, OutputLimit: 100, Timeout: 5 * time.Second},
			result{Stdout: "3\n"}, "", ""},
		{"an argv in a directory", map[string]any{"argv": []string{"ls", "-l"}, "cwd": "sub", "timeoutSeconds": 2},
			tools.TerminalResult{Output: "x.txt\n", ExitCode: &nine}, nil,
			&tools.TerminalCommand{Command: "ls", Args: []string{"-l"}, Cwd: filepath.Join(real, "sub"), OutputLimit: 100, Timeout: 2 * time.Second},
			result{ExitCode: 9, Stdout: "x.txt\n"}, "", ""},
		{"a signal", map[string]any{"argv": []string{"sleep", "9"}},
			tools.TerminalResult{Signal: "SIGTERM"}, nil,
			&tools.TerminalCommand{Command: "sleep", Args: []string{"9"}, Cwd: real, OutputLimit: 100, Timeout: 5 * time.Second},
			result{ExitCode: -1, Signal: "SIGTERM"}, "", ""},
		{"timed out", map[string]any{"argv": []string{"sleep", "9"}},
			tools.TerminalResult{Signal: "SIGKILL", TimedOut: true, Output: "partial"}, nil,
			&tools.TerminalCommand{Command: "sleep", Args: []string{"9"}, Cwd: real, OutputLimit: 100, Timeout: 5 * time.Second},
			result{ExitCode: -1, Signal: "SIGKILL", TimedOut: true, Stdout: "partial"}, tools.CodeTimeout, "did not finish in 5s"},
		{"truncated", map[string]any{"argv": []string{"yes"}},
			tools.TerminalResult{Output: "y\ny\n", Truncated: true, ExitCode: &zero}, nil,
			&tools.TerminalCommand{Command: "yes", Args: []string{}, Cwd: real, OutputLimit: 100, Timeout: 5 * time.Second},
			result{Stdout: "y\ny\n", Truncated: true}, tools.CodeOutputLimit, "over 100 bytes"},
		{"the terminal fails", map[string]any{"argv": []string{"true"}}, tools.TerminalResult{}, errors.New("no terminal capability"),
			&tools.TerminalCommand{Command: "true", Args: []string{}, Cwd: real, OutputLimit: 100, Timeout: 5 * time.Second},
			result{}, tools.CodeExecutionFailed, "the editor's terminal failed: no terminal capability"},
		// Every check before the terminal.
		{"cwd outside", map[string]any{"argv": []string{"true"}, "cwd": "out"}, tools.TerminalResult{}, nil, nil, result{}, tools.CodeInvalidArguments, "outside the workspace"},
		{"cwd private", map[string]any{"argv": []string{"true"}, "cwd": ".nexus/run"}, tools.TerminalResult{}, nil, nil, result{}, tools.CodeInvalidArguments, ".nexus/"},
		{"cwd absolute", map[string]any{"argv": []string{"true"}, "cwd": "/tmp"}, tools.TerminalResult{}, nil, nil, result{}, tools.CodeInvalidArguments, "absolute"},
		{"env name", map[string]any{"argv": []string{"true"}, "env": map[string]string{"A=B": "1"}}, tools.TerminalResult{}, nil, nil, result{}, tools.CodeInvalidArguments, "not a variable name"},
		{"timeout over the limit", map[string]any{"argv": []string{"true"}, "timeoutSeconds": 3600}, tools.TerminalResult{}, nil, nil, result{}, tools.CodeInvalidArguments, "over the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			term.mu.Lock()
			term.res, term.err = tt.res, tt.termErr
			term.mu.Unlock()
			out, err := e.callWith(ctx, "execute_command", tt.args)
			got := term.took()
			switch {
			case tt.want == nil && len(got) != 0:
				t.Fatalf("the terminal ran %+v", got)
			case tt.want != nil && (len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(*tt.want)):
				t.Fatalf("the terminal ran %+v; want %+v", got, *tt.want)
			}
			if tt.code != "" {
				wantCode(t, err, tt.code, tt.msg)
				var te *tools.Error
				if !errors.As(err, &te) || te.Output == nil {
					if tt.want != nil && tt.termErr == nil {
						t.Fatalf("no output with the error")
					}
					return
				}
				out = te.Output
			} else if err != nil {
				t.Fatal(err)
			}
			var r result
			if err := json.Unmarshal(out, &r); err != nil || r.DurationMs == nil {
				t.Fatalf("result %s: %v", out, err)
			}
			r.DurationMs = nil
			if r != tt.result {
				t.Errorf("result %+v, want %+v", r, tt.result)
			}
		})
	}
	e.t = t

	// An app's commands never run there: outside the sandbox.
	e.inv = &tools.Invocation{CallID: "c2", Party: access.ForApp(&access.App{ID: "planner"})}
	_, err := e.callWith(ctx, "execute_command", map[string]any{"argv": []string{"true"}})
	wantCode(t, err, tools.CodePermissionDenied, "outside the sandbox")
	if got := term.took(); len(got) != 0 {
		t.Fatalf("the terminal ran an app's command: %+v", got)
	}

	// A cancelled call ends with its context's error.
	e.inv = &tools.Invocation{CallID: "c3", Party: access.Person("editor")}
	hung := make(chan struct{})
	term.mu.Lock()
	term.hang = hung
	term.mu.Unlock()
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		<-hung
		cancel()
	}()
	if _, err := e.callWith(cctx, "execute_command", map[string]any{"argv": []string{"sleep", "1"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
