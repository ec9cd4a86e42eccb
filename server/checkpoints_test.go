package server

import (
	"strings"
	"testing"
)

// With checkpoints off, every nexus/checkpoints/ method says so, and how
// to turn them on; bad params are refused before the store is reached.
func TestCheckpointsOff(t *testing.T) {
	p := newParts(t)
	s := serve(t, p.options())
	c := connect(t, s)
	c.initialize(t)
	for _, m := range []string{"nexus/checkpoints/list", "nexus/checkpoints/diff", "nexus/checkpoints/undo", "nexus/checkpoints/redo", "nexus/checkpoints/gc"} {
		params := map[string]any{}
		if m == "nexus/checkpoints/diff" {
			params["id"] = "x"
		}
		err := c.call(t, m, params, nil)
		if code(err) != CodeFailedPrecondition || !strings.Contains(err.Error(), "checkpoints.enabled: false") {
			t.Errorf("%s: %v, want failed_precondition naming checkpoints.enabled", m, err)
		}
	}
	for _, tc := range []struct {
		method string
		params map[string]any
		want   string
	}{
		{"nexus/checkpoints/diff", map[string]any{}, "id is required"},
		{"nexus/checkpoints/list", map[string]any{"limit": -1}, "limit -1 is negative"},
		{"nexus/checkpoints/list", map[string]any{"turn": "1"}, "session is required"},
		{"nexus/checkpoints/undo", map[string]any{"turn": "1"}, "session is required"},
		{"nexus/checkpoints/undo", map[string]any{"call": "c", "session": "s"}, "give it alone"},
	} {
		if err := c.call(t, tc.method, tc.params, nil); code(err) != -32602 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want invalid params %q", tc.method, tc.params, err, tc.want)
		}
	}
}
