package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// TestAlwaysUnderDirectoryAnswer: the editor's answer {"answer":
// "allow_always", "directory": D} remembers the file tool's calls under D;
// a directory that does not hold the path, or one with a "once" answer,
// denies the call and remembers nothing. nexus/approvals/list names the
// scope.
func TestAlwaysUnderDirectoryAnswer(t *testing.T) {
	p := newParts(t)
	approvals, err := policy.OpenApprovals(filepath.Join(t.TempDir(), "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	pol := policy.New(policy.Rules{Tools: map[string]policy.Decision{"write_file": policy.Ask}}, approvals)
	p.tools, err = tools.NewManager(tools.Options{Bus: p.bus, Gate: pol.Gate(p.approvers, 5*time.Second, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.tools.Close() })
	err = p.tools.Register(tools.Tool{Definition: tools.Definition{Name: "write_file", Kind: tools.KindEdit, Risk: tools.RiskMedium,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
		Handler: func(context.Context, *tools.Invocation, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	opts := p.options()
	opts.Approvals = approvals
	c := connect(t, serve(t, opts))
	c.initialize(t)
	write := func(path string) bool {
		var ex struct{ Success bool }
		c.mustCall(t, "nexus/tools/execute", map[string]any{"toolName": "write_file", "arguments": map[string]string{"path": path}}, &ex)
		return ex.Success
	}
	answer := func(a any) {
		c.mu.Lock()
		c.answer = func(json.RawMessage) (any, error) { return a, nil }
		c.mu.Unlock()
	}
	asked := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.asked)
	}
	for _, a := range []map[string]string{
		{"answer": "allow_always", "directory": "lib"},
		{"answer": "allow_once", "directory": "src"},
	} {
		answer(a)
		if write("src/a/b.go") {
			t.Errorf("answer %v: the call ran", a)
		}
	}
	if l := approvals.List(); len(l) != 0 {
		t.Fatalf("remembered %+v", l)
	}
	answer(map[string]string{"answer": "allow_always", "directory": "src/"})
	if !write("src/a/b.go") {
		t.Fatal("allow_always under src/: denied")
	}
	answer("reject_once")
	n := asked()
	if !write("src/c.go") || asked() != n {
		t.Errorf("src/c.go after allow_always under src/: asked %d→%d", n, asked())
	}
	if write("lib/c.go") || asked() != n+1 {
		t.Errorf("lib/c.go was not asked about")
	}
	var list approvalsListResult
	c.mustCall(t, "nexus/approvals/list", map[string]any{}, &list)
	if len(list.Approvals) != 1 || list.Approvals[0].ToolName != "write_file:src/**" || list.Approvals[0].Scope != "directory" ||
		list.Approvals[0].Directory != "src" || list.Approvals[0].Covers != `write_file in "src/" and everything under it` {
		t.Errorf("nexus/approvals/list = %+v", list)
	}
}
