package core

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

func TestListDirectory(t *testing.T) {
	e := newEnv(t)
	e.file("a.txt", "12345")
	e.file("dir/b.txt", "b")
	e.file("dir/sub/c.txt", "cc")
	e.file(".git/HEAD", "ref")
	e.file("node_modules/m/index.js", "m")
	e.symlink("dir", "dirlink")

	show := func(r listResult) string {
		var parts []string
		for _, en := range r.Entries {
			parts = append(parts, fmt.Sprintf("%s:%s:%d", en.Path, en.Type, en.Size))
			if !strings.HasSuffix(en.Path, en.Name) {
				t.Errorf("entry %+v: path does not end in the name", en)
			}
		}
		if r.Truncated {
			parts = append(parts, "truncated")
		}
		return strings.Join(parts, " ")
	}
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"root", map[string]any{"path": ""},
			".git:directory:0 .nexus:directory:0 a.txt:file:5 dir:directory:0 dirlink:symlink:0 node_modules:directory:0"},
		{"dot", map[string]any{"path": "."},
			".git:directory:0 .nexus:directory:0 a.txt:file:5 dir:directory:0 dirlink:symlink:0 node_modules:directory:0"},
		{"sub directory", map[string]any{"path": "dir/"}, "dir/b.txt:file:1 dir/sub:directory:0"},
		{"recursive", map[string]any{"path": "", "recursive": true},
			".git:directory:0 .nexus:directory:0 a.txt:file:5 dir:directory:0 dir/b.txt:file:1 dir/sub:directory:0 " +
				"dir/sub/c.txt:file:2 dirlink:symlink:0 node_modules:directory:0 node_modules/m:directory:0 " +
				"node_modules/m/index.js:file:1"},
		{"through a symlink", map[string]any{"path": "dirlink", "recursive": true},
			"dirlink/b.txt:file:1 dirlink/sub:directory:0 dirlink/sub/c.txt:file:2"},
		{"empty directory", map[string]any{"path": "dir/sub/", "recursive": true}, "dir/sub/c.txt:file:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r listResult
			e.mustCall("list_directory", tt.args, &r)
			if got := show(r); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}

	e.core.listLimit = 3
	var r listResult
	e.mustCall("list_directory", map[string]any{"path": "", "recursive": true}, &r)
	if got := show(r); got != ".git:directory:0 .nexus:directory:0 a.txt:file:5 truncated" {
		t.Errorf("capped: %s", got)
	}
	e.core.listLimit = maxListEntries

	for _, tt := range []struct{ path, msg string }{
		{"a.txt", "not a directory"},
		{"missing", "no such file"},
		{".nexus", ".nexus/"},
		{".nexus/run", ".nexus/"},
		{"../", `".."`},
		{"/", "absolute"},
	} {
		_, err := e.call("list_directory", map[string]any{"path": tt.path})
		wantCode(t, err, tools.CodeInvalidArguments, tt.msg)
	}
}

func TestListEmpty(t *testing.T) {
	e := newEnv(t)
	e.file("empty/.keep", "")
	out, err := e.call("list_directory", map[string]any{"path": "empty/.keep/.."})
	wantCode(t, err, tools.CodeInvalidArguments)
	if out != nil {
		t.Errorf("out %s", out)
	}
	if err := removeFile(e, "empty/.keep"); err != nil {
		t.Fatal(err)
	}
	out, err = e.call("list_directory", map[string]any{"path": "empty"})
	if err != nil || string(out) != `{"entries":[]}` {
		t.Errorf("empty directory: %s, %v", out, err)
	}
}
