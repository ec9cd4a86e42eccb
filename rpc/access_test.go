package rpc

import "testing"

func TestMatchAny(t *testing.T) {
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

func TestCallerDefPath(t *testing.T) {
	app := &App{ID: "planner", Read: []string{"shared/**"}, Write: []string{"shared/plans/**"}}
	c := caller{id: Identity{App: app}, appID: "planner"}
	cases := []struct {
		path  string
		write bool
		want  string // "" = refused
	}{
		{"brief.md", true, "planner/brief.md"},
		{"/planner/brief.md", true, "planner/brief.md"},
		{"/shared/x.md", false, "shared/x.md"},
		{"/shared/x.md", true, ""},
		{"/shared/plans/p.md", true, "shared/plans/p.md"},
		{"/coder/x.md", false, ""},
		{"../coder/x.md", false, ""},
		{"/plannerx/a", false, ""},
	}
	for _, tc := range cases {
		got, err := c.defPath(tc.path, tc.write)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("defPath(%q, write=%v) = %q, %v; want %q", tc.path, tc.write, got, err, tc.want)
		}
	}
	if got := c.display("planner/sub/a.md", false); got != "sub/a.md" {
		t.Errorf("display = %q", got)
	}
	if got := c.display("shared/a.md", true); got != "/shared/a.md" {
		t.Errorf("display abs = %q", got)
	}
}
