package core

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
)

// env is a workspace with its neighbours: base/ws is the workspace,
// base/outside and base/ws-evil lie beside it with secrets that no tool may
// read or change, and base/ws/.nexus holds the daemon's private state.
type env struct {
	t       *testing.T
	base    string
	ws      string
	outside string
	evil    string
	core    *Tools
	defs    *state.Definitions
	byName  map[string]tools.Tool
	inv     *tools.Invocation
}

type envOption func(*Config)

// newEnv builds the workspace with a real definitions store at
// <ws>/.nexus/definitions and its history at <ws>/.nexus/history.git.
func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{
		t:       t,
		base:    base,
		ws:      filepath.Join(base, "ws"),
		outside: filepath.Join(base, "outside"),
		evil:    filepath.Join(base, "ws-evil"),
		inv:     &tools.Invocation{CallID: "c1", AppID: "planner", Author: state.AppAuthor("planner")},
	}
	e.write(filepath.Join(e.outside, "secret.txt"), "outside secret\n")
	e.write(filepath.Join(e.outside, "dir", "inner.txt"), "outside inner\n")
	e.write(filepath.Join(e.evil, "secret.txt"), "evil secret\n")
	e.write(filepath.Join(e.ws, ".nexus", "run", "admin.token"), "admin-token\n")
	e.write(filepath.Join(e.ws, ".nexus", "runtime.db"), "bbolt\n")
	e.write(filepath.Join(e.ws, ".nexus", "config.yaml"), "x: 1\n")
	defs, err := state.OpenDefinitions(state.DefinitionsOptions{
		Dir:        filepath.Join(e.ws, ".nexus", "definitions"),
		HistoryDir: filepath.Join(e.ws, ".nexus", "history.git"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { defs.Close() })
	e.defs = defs
	cfg := Config{
		Workspace:      e.ws,
		Definitions:    defs,
		DefinitionsDir: filepath.Join(e.ws, ".nexus", "definitions"),
		Now:            func() time.Time { return time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC) },
	}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e.core = c
	e.byName = map[string]tools.Tool{}
	for _, tl := range c.List() {
		e.byName[tl.Name] = tl
	}
	return e
}

// write creates a file outside the tools, for the test's own setup.
func (e *env) write(name, content string) {
	e.t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// file writes a file of the workspace.
func (e *env) file(rel, content string) { e.write(filepath.Join(e.ws, rel), content) }

// symlink makes a symlink in the workspace.
func (e *env) symlink(target, rel string) {
	e.t.Helper()
	name := filepath.Join(e.ws, rel)
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Symlink(target, name); err != nil {
		e.t.Fatal(err)
	}
}

// read returns a file of the workspace, "" when it does not exist.
func (e *env) read(rel string) string {
	b, _ := os.ReadFile(filepath.Join(e.ws, rel))
	return string(b)
}

// call runs a tool with arguments and, when it succeeds, checks the result
// against the tool's output schema.
func (e *env) call(name string, args any) (json.RawMessage, error) {
	e.t.Helper()
	tl, ok := e.byName[name]
	if !ok {
		e.t.Fatalf("no tool %q", name)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := tl.Handler(context.Background(), e.inv, raw)
	if err == nil {
		checkAgainst(e.t, tl.OutputSchema, out)
	}
	return out, err
}

// mustCall is call that must succeed, decoding the result into v.
func (e *env) mustCall(name string, args, v any) {
	e.t.Helper()
	out, err := e.call(name, args)
	if err != nil {
		e.t.Fatalf("%s %v: %v", name, args, err)
	}
	if v != nil {
		if err := json.Unmarshal(out, v); err != nil {
			e.t.Fatalf("%s: result %s: %v", name, out, err)
		}
	}
}

// checkAgainst validates a JSON document against a schema. It may run on
// other goroutines than the test's, so it does not stop the test.
func checkAgainst(t *testing.T, schema, doc json.RawMessage) {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Errorf("schema: %v", err)
		return
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Errorf("schema: %v", err)
		return
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Errorf("result %s: %v", doc, err)
		return
	}
	if err := rs.Validate(v); err != nil {
		t.Errorf("result %s does not match the output schema: %v", doc, err)
	}
}

// wantCode checks that err is a tool error with the code, and that its
// message contains each of the fragments.
func wantCode(t *testing.T, err error, code string, fragments ...string) {
	t.Helper()
	var te *tools.Error
	if !errors.As(err, &te) {
		t.Fatalf("error = %v (%T), want a *tools.Error with code %s", err, err, code)
	}
	if te.Code != code {
		t.Fatalf("code = %s (%s), want %s", te.Code, te.Message, code)
	}
	for _, f := range fragments {
		if !strings.Contains(te.Message, f) {
			t.Errorf("message %q does not contain %q", te.Message, f)
		}
	}
}

// snapshot records every file under dirs (path → mode and content), to
// check that nothing there changed.
func snapshot(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			v := fi.Mode().String()
			if fi.Mode().IsRegular() {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				v += " " + string(b)
			}
			snap[p] = v
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

func sameSnapshot(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed: %q → %q", p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared", p)
		}
	}
}

// guarded are the places no tool may change: everything outside the
// workspace and the daemon's private state (the definitions store aside).
func (e *env) guarded() []string {
	return []string{e.outside, e.evil, filepath.Join(e.ws, ".nexus", "run"), filepath.Join(e.ws, ".nexus", "runtime.db"),
		filepath.Join(e.ws, ".nexus", "config.yaml")}
}

func TestListAndSchemas(t *testing.T) {
	e := newEnv(t)
	want := []string{"read_file", "write_file", "edit_file", "list_directory", "search_files", "get_current_time"}
	list := e.core.List()
	if len(list) != len(want) {
		t.Fatalf("got %d tools, want %d", len(list), len(want))
	}
	for i, tl := range list {
		if tl.Name != want[i] {
			t.Errorf("tool %d is %q, want %q", i, tl.Name, want[i])
		}
		if tl.Title == "" || tl.Description == "" || tl.Handler == nil || tl.ServerName != "" {
			t.Errorf("%s: title, description and handler are required, server name empty", tl.Name)
		}
		switch tl.Risk {
		case tools.RiskLow, tools.RiskMedium:
		default:
			t.Errorf("%s: risk %q", tl.Name, tl.Risk)
		}
		for what, schema := range map[string]json.RawMessage{"input": tl.InputSchema, "output": tl.OutputSchema} {
			var obj map[string]any
			if err := json.Unmarshal(schema, &obj); err != nil {
				t.Errorf("%s: %s schema is not a JSON object: %v", tl.Name, what, err)
				continue
			}
			if obj["type"] != "object" || obj["additionalProperties"] != false {
				t.Errorf("%s: %s schema: type %v, additionalProperties %v; want object, false", tl.Name, what,
					obj["type"], obj["additionalProperties"])
			}
			var s jsonschema.Schema
			if err := json.Unmarshal(schema, &s); err != nil {
				t.Errorf("%s: %s schema: %v", tl.Name, what, err)
			} else if _, err := s.Resolve(nil); err != nil {
				t.Errorf("%s: %s schema does not resolve: %v", tl.Name, what, err)
			}
			var req struct{ Required []string }
			json.Unmarshal(schema, &req)
			props, _ := obj["properties"].(map[string]any)
			for _, r := range req.Required {
				if _, ok := props[r]; !ok {
					t.Errorf("%s: %s schema requires %q, which it does not define", tl.Name, what, r)
				}
			}
		}
	}
	kinds := map[string]tools.Kind{"read_file": tools.KindRead, "write_file": tools.KindEdit, "edit_file": tools.KindEdit,
		"list_directory": tools.KindRead, "search_files": tools.KindSearch, "get_current_time": tools.KindRead}
	for name, k := range kinds {
		if e.byName[name].Kind != k {
			t.Errorf("%s: kind %q, want %q", name, e.byName[name].Kind, k)
		}
	}
}

// TestInputSchemas checks that the input schemas accept good arguments and
// refuse unknown and missing ones, as the manager will check them.
func TestInputSchemas(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		tool string
		args string
		ok   bool
	}{
		{"read_file", `{"path":"a"}`, true},
		{"read_file", `{"path":"a","startLine":1,"endLine":3}`, true},
		{"read_file", `{"path":"a","startLine":0}`, false},
		{"read_file", `{}`, false},
		{"read_file", `{"path":"a","extra":1}`, false},
		{"write_file", `{"path":"a","content":""}`, true},
		{"write_file", `{"path":"a"}`, false},
		{"edit_file", `{"path":"a","oldText":"x","newText":""}`, true},
		{"edit_file", `{"path":"a","oldText":"","newText":""}`, false},
		{"list_directory", `{"path":"","recursive":true}`, true},
		{"list_directory", `{"recursive":true}`, false},
		{"search_files", `{"pattern":"x"}`, true},
		{"search_files", `{"glob":"*.go","path":"a"}`, true},
		{"search_files", `{"path":"a"}`, false},
		{"get_current_time", `{}`, true},
		{"get_current_time", `{"timezone":"UTC"}`, true},
		{"get_current_time", `{"tz":"UTC"}`, false},
	}
	for _, tt := range tests {
		var s jsonschema.Schema
		if err := json.Unmarshal(e.byName[tt.tool].InputSchema, &s); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		json.Unmarshal([]byte(tt.args), &v)
		if err := rs.Validate(v); (err == nil) != tt.ok {
			t.Errorf("%s %s: validate = %v, want ok %v", tt.tool, tt.args, err, tt.ok)
		}
	}
}

func TestNewChecksConfig(t *testing.T) {
	if _, err := New(Config{Workspace: "relative/ws"}); err == nil {
		t.Error("a relative workspace was accepted")
	}
	if _, err := New(Config{Workspace: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("a missing workspace was accepted")
	}
	ws := t.TempDir()
	c, err := New(Config{Workspace: ws, DefinitionsDir: filepath.Join(t.TempDir(), "defs")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.defInside {
		t.Error("a definitions root outside the workspace counts as inside")
	}
}

func TestExecuteCommandHook(t *testing.T) {
	runner := &tools.Tool{Definition: tools.Definition{Name: "execute_command", Kind: tools.KindExecute, Risk: tools.RiskHigh}}
	e := newEnv(t, func(c *Config) { c.ExecuteCommand = runner })
	if _, ok := e.byName["execute_command"]; !ok {
		t.Fatal("execute_command is not listed")
	}
	e.file("sub/dir/x.txt", "x")
	e.symlink("sub", "linkdir")
	e.symlink(e.outside, "out")
	real, err := filepath.EvalSymlinks(e.ws)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, want, code string
	}{
		{"", real, ""},
		{".", real, ""},
		{"sub/dir", filepath.Join(real, "sub", "dir"), ""},
		{"linkdir/dir", filepath.Join(real, "sub", "dir"), ""},
		{"sub/dir/x.txt", "", tools.CodeInvalidArguments},
		{"missing", "", tools.CodeInvalidArguments},
		{"../outside", "", tools.CodeInvalidArguments},
		{"/tmp", "", tools.CodeInvalidArguments},
		{"out", "", tools.CodeInvalidArguments},
		{".nexus/run", "", tools.CodeInvalidArguments},
		{".nexus/definitions", filepath.Join(real, ".nexus", "definitions"), ""},
	}
	for _, tt := range tests {
		got, err := e.core.dir(access.Person("cli"), tt.path)
		if tt.code != "" {
			wantCode(t, err, tt.code)
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Dir(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
}
