package core

import (
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

// TestAnnotations: every core tool says what it does in MCP's hints, and
// the readers say they only read.
func TestAnnotations(t *testing.T) {
	e := newEnv(t)
	want := map[string]tools.Annotations{
		"read_file":        {ReadOnly: true, Idempotent: true},
		"list_directory":   {ReadOnly: true, Idempotent: true},
		"search_files":     {ReadOnly: true, Idempotent: true},
		"get_current_time": {ReadOnly: true, Idempotent: true},
		"write_file":       {Destructive: true, Idempotent: true},
		"edit_file":        {Destructive: true},
		"execute_command":  {Destructive: true, OpenWorld: true},
		"web_fetch":        {ReadOnly: true, OpenWorld: true},
		"web_search":       {ReadOnly: true, OpenWorld: true},
	}
	list := append(e.core.List(), e.core.ExecuteCommand(ExecConfig{}))
	list = append(list, WebTools(WebConfig{Search: &SearchConfig{URL: "http://127.0.0.1/search"}})...)
	if len(list) != len(want) {
		t.Errorf("%d core tools, want %d: a new tool needs its annotations here", len(list), len(want))
	}
	for _, tl := range list {
		a := tl.Annotations
		if a == nil {
			t.Errorf("%s: no annotations", tl.Name)
			continue
		}
		if w, ok := want[tl.Name]; !ok || *a != w {
			t.Errorf("%s: annotations %+v, want %+v", tl.Name, *a, w)
		}
		if a.ReadOnly != (tl.Kind == tools.KindRead || tl.Kind == tools.KindSearch || tl.Kind == tools.KindFetch) {
			t.Errorf("%s: read-only %v but kind %s", tl.Name, a.ReadOnly, tl.Kind)
		}
	}
}
