package state

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAddressAndDisplay(t *testing.T) {
	tests := []struct {
		base, p string
		dir     bool
		want    string // "" with wantErr
		wantErr bool
	}{
		{base: "", p: "agents/a.md", want: "agents/a.md"},
		{base: "", p: "/agents/a.md", want: "agents/a.md"},
		{base: "app1", p: "brief.md", want: "app1/brief.md"},
		{base: "app1", p: "/shared/x.md", want: "shared/x.md"},
		{base: "app1", p: "", dir: true, want: "app1"},
		{base: "app1", p: "sub/", dir: true, want: "app1/sub"},
		{base: "app1", p: "/", dir: true, want: ""},
		{base: "", p: "", dir: true, want: ""},
		{base: "app1", p: "", wantErr: true},
		{base: "app1", p: "/", wantErr: true},
		{base: "app1", p: "../app2/brief.md", wantErr: true},
		{base: "app1", p: "//etc/passwd", wantErr: true},
		{base: "", p: "a/.git/config", wantErr: true},
		{base: "app1", p: "../", dir: true, wantErr: true},
	}
	for _, tc := range tests {
		got, err := Address(tc.base, tc.p, tc.dir)
		if tc.wantErr {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Address(%q, %q, %v) = %q, %v; want ErrInvalid", tc.base, tc.p, tc.dir, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Address(%q, %q, %v) = %q, %v; want %q", tc.base, tc.p, tc.dir, got, err, tc.want)
			continue
		}
		// Display gives the caller back what it wrote, up to a trailing "/".
		abs := len(tc.p) > 0 && tc.p[0] == '/'
		want := tc.p
		if tc.dir && len(want) > 1 {
			want = strings.TrimSuffix(want, "/")
		}
		if d := Display(tc.base, got, abs); d != want {
			t.Errorf("Display(%q, %q, %v) = %q; want %q", tc.base, got, abs, d, want)
		}
	}
	// A path outside the base, reached without a leading "/", stays as it is.
	if d := Display("app1", "shared/x.md", false); d != "shared/x.md" {
		t.Errorf("Display outside the base = %q", d)
	}
}

func TestTTLSeconds(t *testing.T) {
	for _, tc := range []struct {
		sec  int64
		want time.Duration
		err  string
	}{
		{0, 0, ""},
		{90, 90 * time.Second, ""},
		{int64(MaxTTL / time.Second), MaxTTL, ""},
		{-5, 0, "ttlSeconds -5 is negative: invalid argument"},
		{int64(MaxTTL/time.Second) + 1, 0, "ttlSeconds 3153600001 is over 100 years: invalid argument"},
		{1 << 62, 0, "ttlSeconds 4611686018427387904 is over 100 years: invalid argument"},
	} {
		got, err := TTLSeconds(tc.sec)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err || !errors.Is(err, ErrInvalid) {
				t.Errorf("TTLSeconds(%d) = %v, %v; want %q", tc.sec, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("TTLSeconds(%d) = %v, %v; want %v", tc.sec, got, err, tc.want)
		}
	}
}
