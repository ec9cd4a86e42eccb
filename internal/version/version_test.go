package version

import (
	"runtime/debug"
	"testing"
)

func TestOf(t *testing.T) {
	stamped := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/nexuscocreate/nexus", Version: v}}
	}
	for _, tc := range []struct {
		name string
		set  string
		bi   *debug.BuildInfo
		want string
	}{
		{"ldflags win over the build info", "v1.2.3", stamped("v1.0.0"), "v1.2.3"},
		{"ldflags with a commit", "81a9369-dirty", nil, "81a9369-dirty"},
		{"go install of a tag", Dev, stamped("v1.0.0"), "v1.0.0"},
		{"go build in a checkout", "", stamped("v0.0.0-20261128072304-81a9369abcde+dirty"), "v0.0.0-20261128072304-81a9369abcde+dirty"},
		{"no version known", Dev, stamped("(devel)"), Dev},
		{"no build info", "", nil, Dev},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := of(tc.set, tc.bi); got != tc.want {
				t.Errorf("of(%q, %v) = %q, want %q", tc.set, tc.bi, got, tc.want)
			}
		})
	}
}
