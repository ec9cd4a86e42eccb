package access

import (
	"errors"
	"slices"
	"testing"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		patterns []string
		path     string
		want     bool
	}{
		{[]string{"shared/**"}, "shared/a/b.md", true},
		{[]string{"shared/**"}, "shared", true},
		{[]string{"shared/**"}, "sharedx/a", false},
		{[]string{"shared"}, "shared/deep/file", true}, // a directory covers what is below it
		{[]string{"/team/*.md"}, "team/a.md", true},
		{[]string{"team/*.md"}, "team/sub/a.md", false},
		{[]string{"**/*.yaml"}, "a/b/c.yaml", true},
		{[]string{"**/*.yaml"}, "a/b/c.md", false},
		{[]string{"a/**/z"}, "a/z", true},
		{[]string{"a/**/z"}, "a/b/c/z", true},
		{[]string{"[bad"}, "anything", false},
		{nil, "x", false},
	}
	for _, c := range cases {
		if got := matchAny(c.patterns, c.path); got != c.want {
			t.Errorf("matchAny(%q, %q) = %v, want %v", c.patterns, c.path, got, c.want)
		}
	}
}

func TestDefinition(t *testing.T) {
	planner := ForApp(&App{ID: "planner", Read: []string{"shared/**"}, Write: []string{"shared/plans/**"}})
	bare := ForApp(&App{ID: "coder"})
	person := Person("editor")
	cases := []struct {
		who   Party
		path  string
		write bool
		want  bool
	}{
		{planner, "planner/brief.md", true, true},
		{planner, "planner", true, true},
		{planner, "shared/x.md", false, true},
		{planner, "shared/x.md", true, false},
		{planner, "shared/plans/p.md", true, true},
		{planner, "coder/x.md", false, false},
		{planner, "plannerx/a", false, false},
		{planner, "", false, false},
		{bare, "coder/a", true, true},
		{bare, "planner/a", false, false},
		{bare, "shared/x.md", false, false},
		{person, "planner/a", true, true},
		{person, "", false, true},
		{Party{}, "planner/a", false, false},
		{Party{}, "", false, false},
	}
	for _, c := range cases {
		err := c.who.Definition(c.path, c.write)
		if (err == nil) != c.want {
			t.Errorf("%v.Definition(%q, write=%v) = %v, want allowed=%v", c.who, c.path, c.write, err, c.want)
		}
		if err != nil && !errors.Is(err, ErrDenied) {
			t.Errorf("%v.Definition(%q): %v does not wrap ErrDenied", c.who, c.path, err)
		}
	}
}

func TestMayList(t *testing.T) {
	p := ForApp(&App{ID: "alpha", Read: []string{"team/*/public/**"}})
	cases := map[string]bool{
		"":                  true, // the root, filtered to what it may see
		"alpha":             true,
		"alpha/sub":         true,
		"gamma":             false,
		"team":              true,
		"team/x":            true,
		"team/x/public":     true,
		"team/x/private":    false,
		"team/x/public/doc": true,
	}
	for dir, want := range cases {
		if got := p.MayList(dir); got != want {
			t.Errorf("MayList(%q) = %v, want %v", dir, got, want)
		}
	}
	if (Party{}).MayList("") {
		t.Error("no one may list the root")
	}
}

func TestNamespace(t *testing.T) {
	p := ForApp(&App{ID: "alpha", Namespaces: []string{"team"}})
	for ns, want := range map[string]string{"": "alpha", "alpha": "alpha", "team": "team", "gamma": ""} {
		got, err := p.Namespace(ns)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("Namespace(%q) = %q, %v; want %q", ns, got, err, want)
		}
	}
	if got, err := Person("cli").Namespace("gamma"); got != "gamma" || err != nil {
		t.Errorf("the person's Namespace(gamma) = %q, %v", got, err)
	}
}

func TestMounts(t *testing.T) {
	p := ForApp(&App{ID: "alpha", Read: []string{"shared/**", "team/*.md"}, Write: []string{"/out"}})
	want := []Mount{{Path: "alpha", Writable: true}, {Path: "out", Writable: true}, {Path: "shared"}, {Path: "team/*.md", Glob: true}}
	if got := p.Mounts(); !slices.Equal(got, want) {
		t.Errorf("Mounts = %+v, want %+v", got, want)
	}
	if got := Person("cli").Mounts(); !slices.Equal(got, []Mount{{Writable: true}}) {
		t.Errorf("the person's Mounts = %+v", got)
	}
	if got := (Party{}).Mounts(); got != nil {
		t.Errorf("no one's Mounts = %+v", got)
	}
}
