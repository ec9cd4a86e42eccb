package core

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

func ptr(n int) *int { return &n }

func TestReadFile(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ReadLimit = 64 })
	e.file("a.txt", "one\ntwo\nthree\n")
	e.file("nonl.txt", "one\ntwo")
	e.file("empty.txt", "")
	e.file("crlf.txt", "a\r\nb\r\n")
	e.file("bin.dat", "x\x00y\n")
	e.file("dir/inner.txt", "inner\n")
	var big strings.Builder
	for i := range 20 {
		big.WriteString("line " + string(rune('a'+i)) + "\n") // 7 bytes a line
	}
	e.file("big.txt", big.String())
	e.file("long.txt", strings.Repeat("x", 100)+"\nshort\n")
	e.file("html.txt", "<a href=\"x\">&</a>\n")
	e.symlink("a.txt", "link.txt")
	e.symlink("../a.txt", "dir/up.txt")
	e.symlink("dir", "dirlink")
	e.file(".nexus/definitions/planner/d.yaml", "k: v\n")
	e.file(".nexus/definitions/coder/d.yaml", "k: v\n")

	type args struct {
		Path      string `json:"path"`
		StartLine *int   `json:"startLine,omitempty"`
		EndLine   *int   `json:"endLine,omitempty"`
	}
	tests := []struct {
		name string
		args args
		want readResult
		code string
		msg  string
	}{
		{"whole", args{Path: "a.txt"}, readResult{Content: "one\ntwo\nthree\n", TotalLines: 3, StartLine: 1, EndLine: 3}, "", ""},
		{"one line", args{Path: "a.txt", StartLine: ptr(2), EndLine: ptr(2)}, readResult{Content: "two\n", TotalLines: 3, StartLine: 2, EndLine: 2}, "", ""},
		{"from a line", args{Path: "a.txt", StartLine: ptr(2)}, readResult{Content: "two\nthree\n", TotalLines: 3, StartLine: 2, EndLine: 3}, "", ""},
		{"to a line", args{Path: "a.txt", EndLine: ptr(1)}, readResult{Content: "one\n", TotalLines: 3, StartLine: 1, EndLine: 1}, "", ""},
		{"end past the end", args{Path: "a.txt", StartLine: ptr(3), EndLine: ptr(99)}, readResult{Content: "three\n", TotalLines: 3, StartLine: 3, EndLine: 3}, "", ""},
		{"start past the end", args{Path: "a.txt", StartLine: ptr(4)}, readResult{}, tools.CodeInvalidArguments, "past the end"},
		{"end before start", args{Path: "a.txt", StartLine: ptr(3), EndLine: ptr(2)}, readResult{}, tools.CodeInvalidArguments, "before startLine"},
		{"start zero", args{Path: "a.txt", StartLine: ptr(0)}, readResult{}, tools.CodeInvalidArguments, "numbered from 1"},
		{"no final newline", args{Path: "nonl.txt"}, readResult{Content: "one\ntwo", TotalLines: 2, StartLine: 1, EndLine: 2}, "", ""},
		{"last line without newline", args{Path: "nonl.txt", StartLine: ptr(2)}, readResult{Content: "two", TotalLines: 2, StartLine: 2, EndLine: 2}, "", ""},
		{"empty", args{Path: "empty.txt"}, readResult{}, "", ""},
		{"empty with range", args{Path: "empty.txt", StartLine: ptr(1), EndLine: ptr(5)}, readResult{}, "", ""},
		{"empty past the end", args{Path: "empty.txt", StartLine: ptr(2)}, readResult{}, tools.CodeInvalidArguments, "empty"},
		{"crlf", args{Path: "crlf.txt"}, readResult{Content: "a\r\nb\r\n", TotalLines: 2, StartLine: 1, EndLine: 2}, "", ""},
		{"binary", args{Path: "bin.dat"}, readResult{}, tools.CodeInvalidArguments, "binary"},
		{"directory", args{Path: "dir"}, readResult{}, tools.CodeInvalidArguments, "is a directory"},
		{"root", args{Path: "."}, readResult{}, tools.CodeInvalidArguments, "empty"},
		{"missing", args{Path: "nope.txt"}, readResult{}, tools.CodeInvalidArguments, "no such file"},
		{"missing parent", args{Path: "nope/x.txt"}, readResult{}, tools.CodeInvalidArguments, "no such file"},
		{"parent is a file", args{Path: "a.txt/x"}, readResult{}, tools.CodeInvalidArguments, "not a directory"},
		{"empty path", args{Path: ""}, readResult{}, tools.CodeInvalidArguments, "path is empty"},
		{"over the limit", args{Path: "big.txt"}, readResult{}, tools.CodeOutputLimit, "startLine and endLine"},
		{"range under the limit", args{Path: "big.txt", StartLine: ptr(19)}, readResult{Content: "line s\nline t\n", TotalLines: 20, StartLine: 19, EndLine: 20}, "", ""},
		{"range over the limit", args{Path: "big.txt", StartLine: ptr(2), EndLine: ptr(20)},
			readResult{Content: big.String()[7 : 7*10], TotalLines: 20, StartLine: 2, EndLine: 10, Truncated: true}, "", ""},
		{"a line over the limit", args{Path: "long.txt", StartLine: ptr(1)}, readResult{}, tools.CodeOutputLimit, "line 1 of \"long.txt\" alone"},
		{"after a long line", args{Path: "long.txt", StartLine: ptr(2)}, readResult{Content: "short\n", TotalLines: 2, StartLine: 2, EndLine: 2}, "", ""},
		{"symlink inside", args{Path: "link.txt"}, readResult{Content: "one\ntwo\nthree\n", TotalLines: 3, StartLine: 1, EndLine: 3}, "", ""},
		{"symlink up inside", args{Path: "dir/up.txt", EndLine: ptr(1)}, readResult{Content: "one\n", TotalLines: 3, StartLine: 1, EndLine: 1}, "", ""},
		{"through a symlinked dir", args{Path: "dirlink/inner.txt"}, readResult{Content: "inner\n", TotalLines: 1, StartLine: 1, EndLine: 1}, "", ""},
		{"clean path", args{Path: "./dir//inner.txt"}, readResult{Content: "inner\n", TotalLines: 1, StartLine: 1, EndLine: 1}, "", ""},
		{"html unescaped", args{Path: "html.txt"}, readResult{Content: "<a href=\"x\">&</a>\n", TotalLines: 1, StartLine: 1, EndLine: 1}, "", ""},
		{"definition", args{Path: ".nexus/definitions/planner/d.yaml"}, readResult{Content: "k: v\n", TotalLines: 1, StartLine: 1, EndLine: 1}, "", ""},
		{"another app's definition", args{Path: ".nexus/definitions/coder/d.yaml"}, readResult{}, tools.CodePermissionDenied, `app "planner" may not read "/coder/d.yaml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got readResult
			out, err := e.call("read_file", tt.args)
			if tt.code != "" {
				wantCode(t, err, tt.code, tt.msg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), `\u003c`) {
				t.Errorf("result escapes HTML: %s", out)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	e := newEnv(t)
	e.file("a.txt", "old\n")
	if err := os.Chmod(filepath.Join(e.ws, "a.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.file("dir/keep.txt", "keep")
	e.symlink("a.txt", "link.txt")
	e.symlink("made/by/link.txt", "dangling.txt")

	tests := []struct {
		name, path, content string
		created             bool
		file                string // where the content lands
		code, msg           string
	}{
		{"new with parents", "new/deep/f.txt", "hello\n", true, "new/deep/f.txt", "", ""},
		{"overwrite", "a.txt", "new\n", false, "a.txt", "", ""},
		{"empty content", "dir/empty.txt", "", true, "dir/empty.txt", "", ""},
		{"through a symlink", "link.txt", "via link\n", false, "a.txt", "", ""},
		{"through a dangling symlink", "dangling.txt", "made\n", true, "made/by/link.txt", "", ""},
		{"unicode", "dir/ü.txt", "grüße\n", true, "dir/ü.txt", "", ""},
		{"a directory", "dir", "x", false, "", tools.CodeInvalidArguments, "is a directory"},
		{"the root", "", "x", false, "", tools.CodeInvalidArguments, "path is empty"},
		{"parent is a file", "dir/keep.txt/x", "x", false, "", tools.CodeInvalidArguments, "not a directory"},
		{"trailing slash", "newdir/", "x", false, "", tools.CodeInvalidArguments, "ends in a slash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.call("write_file", map[string]any{"path": tt.path, "content": tt.content})
			if tt.code != "" {
				wantCode(t, err, tt.code, tt.msg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got writeResult
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			want := writeResult{Path: tt.path, BytesWritten: len(tt.content), Created: tt.created}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if c := e.read(tt.file); c != tt.content {
				t.Errorf("%s holds %q, want %q", tt.file, c, tt.content)
			}
		})
	}
	if fi, err := os.Stat(filepath.Join(e.ws, "a.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("a.txt mode after overwrite: %v, %v; want 0600 kept", fi.Mode(), err)
	}
	if fi, err := os.Lstat(filepath.Join(e.ws, "link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.txt is no longer a symlink: %v", err)
	}
	noTempFiles(t, e.ws)
}

// noTempFiles checks that no write left a temporary file behind.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".nexus-tmp-") && !strings.Contains(p, "history.git") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

func TestEditFile(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, content, oldText, newText string
		want                            string
		code, msg                       string
	}{
		{"replace", "a\nb\nc\n", "b\n", "B\nB2\n", "a\nB\nB2\nc\n", "", ""},
		{"delete", "keep drop keep", " drop", "", "keep keep", "", ""},
		{"same text", "x y", "y", "y", "x y", "", ""},
		{"not found", "abc", "zzz", "y", "", tools.CodeInvalidArguments, "oldText not found"},
		{"twice", "x = 1\nx = 1\n", "x = 1", "x = 2", "", tools.CodeInvalidArguments, "occurs 2 times"},
		{"overlapping", "aaa", "aa", "b", "", tools.CodeInvalidArguments, "occurs 2 times; include more context"},
		{"whitespace matters", "\tindent\n", "  indent", "x", "", tools.CodeInvalidArguments, "not found"},
		{"empty oldText", "abc", "", "x", "", tools.CodeInvalidArguments, "oldText is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.file("f.txt", tt.content)
			os.Chmod(filepath.Join(e.ws, "f.txt"), 0o640)
			out, err := e.call("edit_file", map[string]any{"path": "f.txt", "oldText": tt.oldText, "newText": tt.newText})
			if tt.code != "" {
				wantCode(t, err, tt.code, tt.msg)
				if c := e.read("f.txt"); c != tt.content {
					t.Errorf("a failed edit changed the file to %q", c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got editResult
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if got != (editResult{Path: "f.txt", Replacements: 1}) {
				t.Errorf("got %+v", got)
			}
			if c := e.read("f.txt"); c != tt.want {
				t.Errorf("file holds %q, want %q", c, tt.want)
			}
			if fi, _ := os.Stat(filepath.Join(e.ws, "f.txt")); fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want 0640 kept", fi.Mode())
			}
		})
	}

	e.file("dir/x.txt", "x")
	for _, tt := range []struct{ path, msg string }{
		{"missing.txt", "no such file"},
		{"nodir/x.txt", "no such file"},
		{"dir", "is a directory"},
		{"", "path is empty"},
	} {
		_, err := e.call("edit_file", map[string]any{"path": tt.path, "oldText": "x", "newText": "y"})
		wantCode(t, err, tools.CodeInvalidArguments, tt.msg)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "nodir")); !os.IsNotExist(err) {
		t.Errorf("edit_file created a directory: %v", err)
	}
	// Through a symlink, the target is edited and the link stays.
	e.file("target.txt", "hello world")
	e.symlink("target.txt", "alias.txt")
	e.mustCall("edit_file", map[string]any{"path": "alias.txt", "oldText": "world", "newText": "there"}, nil)
	if c := e.read("target.txt"); c != "hello there" {
		t.Errorf("target holds %q", c)
	}
	noTempFiles(t, e.ws)
}

func TestBadArguments(t *testing.T) {
	e := newEnv(t)
	// Unknown fields are refused by the input schema, before the handler.
	m, err := tools.NewManager(tools.Options{Gate: func(context.Context, *tools.GateRequest, func(tools.ICERC)) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, name := range []string{"read_file", "write_file", "edit_file", "list_directory", "search_files", "get_current_time"} {
		if err := m.Register(e.byName[name]); err != nil {
			t.Fatal(err)
		}
		// Otherwise valid, so that the unknown field is the error.
		valid := map[string]string{"read_file": `"path":"a"`, "write_file": `"path":"a","content":""`,
			"edit_file": `"path":"a","oldText":"x","newText":"y"`, "search_files": `"pattern":"x"`}[name]
		if valid != "" {
			valid += ","
		}
		c := m.Execute(t.Context(), tools.ExecuteRequest{ToolName: name, Arguments: json.RawMessage(`{` + valid + `"unknown": 1}`)})
		if c.Error == nil || c.Error.Code != tools.CodeInvalidArguments || !strings.Contains(c.Error.Message, `unexpected additional properties ["unknown"]`) {
			t.Errorf("%s with an unknown field: %+v", name, c.Error)
		}
		_, err := e.byName[name].Handler(t.Context(), e.inv, []byte(`[1]`))
		wantCode(t, err, tools.CodeInvalidArguments)
	}
	_, err = e.call("write_file", map[string]any{"path": "x"})
	wantCode(t, err, tools.CodeInvalidArguments, "content is missing")
	_, err = e.call("edit_file", map[string]any{"path": "x", "oldText": "a"})
	wantCode(t, err, tools.CodeInvalidArguments, "newText is missing")
}
