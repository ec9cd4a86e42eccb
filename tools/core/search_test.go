package core

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

func removeFile(e *env, rel string) error { return os.Remove(filepath.Join(e.ws, rel)) }

func TestSearchFiles(t *testing.T) {
	e := newEnv(t)
	e.file("a.go", "package a\n\nfunc Needle() {}\n")
	e.file("b.txt", "no\nneedle here\r\nand NEEDLE\n")
	e.file("cmd/x/main.go", "package main // needle\n")
	e.file("cmd/x/main_test.go", "package main\n")
	e.file(".git/config", "needle\n")
	e.file(".nexus/definitions/planner/d.yaml", "needle: 1\n")
	e.file(".nexus/definitions/coder/d.yaml", "needle: 2\n") // another app's: never found
	e.file("node_modules/m/index.js", "needle\n")
	e.file("sub/.git/config", "needle\n")
	e.file("bin.dat", "needle\x00\n")
	e.file("long.txt", "needle"+strings.Repeat("é", 400)+"\n")
	e.symlink("a.go", "link.go")
	big, err := os.Create(filepath.Join(e.ws, "big.log"))
	if err != nil {
		t.Fatal(err)
	}
	big.WriteString("needle\n")
	big.Truncate(maxSearchFileSize + 1) // sparse
	big.Close()

	show := func(r searchResult) string {
		var parts []string
		for _, m := range r.Matches {
			parts = append(parts, fmt.Sprintf("%s:%d:%s", m.Path, m.Line, m.Text))
		}
		if r.Files != nil {
			parts = append(parts, "files="+strings.Join(r.Files, ","))
		}
		if r.Truncated {
			parts = append(parts, "truncated")
		}
		return strings.Join(parts, " | ")
	}
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"pattern", map[string]any{"pattern": "needle"},
			"b.txt:2:needle here | cmd/x/main.go:1:package main // needle | long.txt:1:needle" + strings.Repeat("é", 247) + "…"},
		{"case-insensitive", map[string]any{"pattern": "(?i)needle", "glob": "b.*"},
			"b.txt:2:needle here | b.txt:3:and NEEDLE"},
		{"regexp", map[string]any{"pattern": `^func \w+\(\)`}, "a.go:3:func Needle() {}"},
		{"glob on the name", map[string]any{"glob": "*.go"}, "files=a.go,cmd/x/main.go,cmd/x/main_test.go"},
		{"glob on the path", map[string]any{"glob": "cmd/**/*_test.go"}, "files=cmd/x/main_test.go"},
		{"glob with leading **", map[string]any{"glob": "**/main.go"}, "files=cmd/x/main.go"},
		{"glob relative to the path", map[string]any{"path": "cmd", "glob": "x/*.go"}, "files=cmd/x/main.go,cmd/x/main_test.go"},
		{"glob without a match", map[string]any{"glob": "*.rs"}, "files="},
		{"pattern and glob", map[string]any{"pattern": "package", "glob": "*_test.go"}, "cmd/x/main_test.go:1:package main"},
		{"under a path", map[string]any{"path": "cmd", "pattern": "needle"}, "cmd/x/main.go:1:package main // needle"},
		{"one file", map[string]any{"path": "b.txt", "pattern": "needle"}, "b.txt:2:needle here"},
		{"one file, glob", map[string]any{"path": "cmd/x/main.go", "glob": "*.go"}, "files=cmd/x/main.go"},
		{"definitions", map[string]any{"path": ".nexus/definitions", "pattern": "needle"}, ".nexus/definitions/planner/d.yaml:1:needle: 1"},
		{"no match", map[string]any{"pattern": "haystack"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r searchResult
			e.mustCall("search_files", tt.args, &r)
			if got := show(r); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}

	e.core.cfg.SearchLimit = 2
	var r searchResult
	e.mustCall("search_files", map[string]any{"pattern": "needle|package"}, &r)
	if got := show(r); got != "a.go:1:package a | b.txt:2:needle here | truncated" {
		t.Errorf("capped: %s", got)
	}
	e.mustCall("search_files", map[string]any{"glob": "*"}, &r)
	if len(r.Files) != 2 || !r.Truncated {
		t.Errorf("capped glob: %s", show(r))
	}
	e.core.cfg.SearchLimit = DefaultSearchLimit

	for _, tt := range []struct {
		args map[string]any
		msg  string
	}{
		{map[string]any{"path": "cmd"}, "pattern, a glob, or both"},
		{map[string]any{"pattern": "("}, "not a valid regular expression"},
		{map[string]any{"glob": "["}, "malformed"},
		{map[string]any{"glob": "/etc/*"}, "absolute"},
		{map[string]any{"pattern": "x", "path": "missing"}, "no such file"},
		{map[string]any{"pattern": "x", "path": ".nexus"}, ".nexus/"},
		{map[string]any{"pattern": "x", "path": "../outside"}, `".."`},
	} {
		_, err := e.call("search_files", tt.args)
		wantCode(t, err, tools.CodeInvalidArguments, tt.msg)
	}
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		glob, rel string
		want      bool
	}{
		{"*.go", "a.go", true},
		{"*.go", "x/y/a.go", true},
		{"*.go", "a.go.txt", false},
		{"x/*.go", "x/a.go", true},
		{"x/*.go", "x/y/a.go", false},
		{"x/**/*.go", "x/a.go", true},
		{"x/**/*.go", "x/y/z/a.go", true},
		{"**/*.go", "a.go", true},
		{"**", "a/b/c", true},
		{"x/**", "y/a", false},
		{"a/**/b/**/c", "a/1/b/2/3/c", true},
		{"a/**/b", "a/b/c", false},
	}
	for _, tt := range tests {
		if got := matchGlob(tt.glob, tt.rel); got != tt.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tt.glob, tt.rel, got, tt.want)
		}
	}
}
