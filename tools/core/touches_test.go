package core

import (
	"encoding/json"
	"reflect"
	"runtime"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

// TestTouches checks what each tool says it may change, for its
// checkpoint: the one file of write_file and edit_file, as it resolves,
// any file for execute_command, nothing for a read or invalid arguments.
func TestTouches(t *testing.T) {
	e := newEnv(t)
	e.file("src/a.go", "package a\n")
	if runtime.GOOS != "windows" {
		e.symlink("src/a.go", "link.go")
	}
	touch := func(name, args string) tools.Touch {
		t.Helper()
		tl, ok := e.byName[name]
		if !ok {
			tl = e.core.ExecuteCommand(ExecConfig{})
		}
		if tl.Touches == nil {
			return tools.Touch{}
		}
		return tl.Touches(json.RawMessage(args))
	}
	cases := []struct {
		tool, args string
		want       tools.Touch
	}{
		{"write_file", `{"path":"src/a.go","content":"x"}`, tools.Touch{Paths: []string{"src/a.go"}}},
		{"write_file", `{"path":"./src//new.go","content":"x"}`, tools.Touch{Paths: []string{"src/new.go"}}},
		{"edit_file", `{"path":"src/a.go","oldText":"a","newText":"b"}`, tools.Touch{Paths: []string{"src/a.go"}}},
		{"write_file", `{"path":"../outside/secret.txt","content":"x"}`, tools.Touch{}},
		{"write_file", `{"path":"/etc/passwd","content":"x"}`, tools.Touch{}},
		{"write_file", `{"path":".nexus/run/admin.token","content":"x"}`, tools.Touch{}},
		{"write_file", `{"path":""}`, tools.Touch{}},
		{"edit_file", `not json`, tools.Touch{}},
		{"execute_command", `{"command":"true"}`, tools.Touch{All: true}},
		{"read_file", `{"path":"src/a.go"}`, tools.Touch{}},
		{"list_directory", `{"path":"src"}`, tools.Touch{}},
		{"search_files", `{"pattern":"a"}`, tools.Touch{}},
	}
	if runtime.GOOS != "windows" {
		cases = append(cases, struct {
			tool, args string
			want       tools.Touch
		}{"write_file", `{"path":"link.go","content":"x"}`, tools.Touch{Paths: []string{"src/a.go"}}})
	}
	for _, c := range cases {
		if got := touch(c.tool, c.args); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s: touches %+v, want %+v", c.tool, c.args, got, c.want)
		}
	}
}
