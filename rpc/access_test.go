package rpc

import (
	"testing"

	"github.com/nexuscocreate/nexus/access"
)

func TestCallerDefPath(t *testing.T) {
	app := &access.App{ID: "planner"}
	c := caller{id: Identity{App: app}, party: access.ForApp(app), appID: "planner"}
	cases := []struct {
		path string
		want string // "" = refused
	}{
		{"brief.md", "planner/brief.md"},
		{"/planner/brief.md", "planner/brief.md"},
		{"/shared/x.md", "shared/x.md"},
		{"../coder/x.md", ""},
		{"/", ""},
	}
	for _, tc := range cases {
		got, err := c.defPath(tc.path)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("defPath(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
	if got := c.display("planner/sub/a.md", false); got != "sub/a.md" {
		t.Errorf("display = %q", got)
	}
	if got := c.display("shared/a.md", true); got != "/shared/a.md" {
		t.Errorf("display abs = %q", got)
	}
}
