package policy

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/tools"
)

var writeTool = tools.Tool{
	Definition: tools.Definition{Name: "write_file", Kind: tools.KindEdit, Risk: tools.RiskMedium,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	Handler: func(context.Context, *tools.Invocation, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"ok":true}`), nil
	},
}

func gateManager(t *testing.T, approvers *Approvers, timeout time.Duration) *tools.Manager {
	t.Helper()
	store, err := OpenApprovals(filepath.Join(t.TempDir(), "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := New(Rules{}, store)
	m, err := tools.NewManager(tools.Options{Gate: p.Gate(approvers, timeout, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Register(writeTool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func run(m *tools.Manager) tools.Call {
	return m.Execute(context.Background(), tools.ExecuteRequest{ToolName: "write_file", AppID: "planner",
		Arguments: json.RawMessage(`{"path":"a.md"}`), Intent: "save the plan"})
}

func TestGateAsksTheApprover(t *testing.T) {
	var approvers Approvers
	m := gateManager(t, &approvers, time.Minute)
	// No approver attached: ask is denied, with a message saying why.
	if c := run(m); c.Error == nil || c.Error.Code != tools.CodePermissionDenied || !strings.Contains(c.Error.Message, "no editor is attached") || c.ICERC == nil {
		t.Fatalf("without approver: %+v", c)
	}
	var asked atomic.Int32
	answer := RejectOnce
	approvers.Set(func(_ context.Context, call tools.Call, rec ICERC) (Answer, error) {
		asked.Add(1)
		if rec.Intent != "save the plan" || call.ICERC == nil || call.ToolName != "write_file" {
			t.Errorf("approver saw %+v / %+v", call, rec)
		}
		return answer, nil
	})
	if c := run(m); c.Error == nil || !strings.Contains(c.Error.Message, "rejected") {
		t.Errorf("reject_once: %+v", c.Error)
	}
	answer = AllowOnce
	if c := run(m); c.Status != tools.StatusCompleted {
		t.Errorf("allow_once: %+v", c.Error)
	}
	answer = AllowAlways
	run(m)
	n := asked.Load()
	if c := run(m); c.Status != tools.StatusCompleted || asked.Load() != n {
		t.Errorf("after allow_always the person was asked again (%d→%d) or the call failed: %+v", n, asked.Load(), c.Error)
	}
}

func TestGateDeniesOnTimeoutOrError(t *testing.T) {
	var approvers Approvers
	m := gateManager(t, &approvers, 20*time.Millisecond)
	approvers.Set(func(ctx context.Context, _ tools.Call, _ ICERC) (Answer, error) {
		<-ctx.Done() // the editor never answers
		return "", ctx.Err()
	})
	if c := run(m); c.Error == nil || !strings.Contains(c.Error.Message, "no answer") {
		t.Errorf("timeout: %+v", c.Error)
	}
	approvers.Set(func(context.Context, tools.Call, ICERC) (Answer, error) { return "", errors.New("editor went away") })
	if c := run(m); c.Error == nil || !strings.Contains(c.Error.Message, "editor went away") {
		t.Errorf("error: %+v", c.Error)
	}
	approvers.Set(func(context.Context, tools.Call, ICERC) (Answer, error) { return "sure", nil })
	if c := run(m); c.Error == nil || c.Error.Code != tools.CodePermissionDenied {
		t.Errorf("bad answer: %+v", c.Error)
	}
}

// TestGateAsksTheCallsOwnApprover: an approver in the call's context
// (WithApprover) answers before the attached one, and its "always" is
// remembered like the editor's.
func TestGateAsksTheCallsOwnApprover(t *testing.T) {
	var approvers Approvers
	m := gateManager(t, &approvers, time.Minute)
	approvers.Set(func(context.Context, tools.Call, ICERC) (Answer, error) {
		t.Error("the attached approver was asked about a call that brings its own")
		return RejectOnce, nil
	})
	var asked atomic.Int32
	answer := RejectOnce
	own := func(_ context.Context, call tools.Call, rec ICERC) (Answer, error) {
		asked.Add(1)
		if rec.Intent != "save the plan" || call.ToolName != "write_file" {
			t.Errorf("the call's approver saw %+v / %+v", call, rec)
		}
		return answer, nil
	}
	runOwn := func() tools.Call {
		return m.Execute(WithApprover(context.Background(), own), tools.ExecuteRequest{ToolName: "write_file", AppID: "planner",
			Arguments: json.RawMessage(`{"path":"a.md"}`), Intent: "save the plan"})
	}
	if c := runOwn(); c.Error == nil || !strings.Contains(c.Error.Message, "rejected") {
		t.Errorf("reject_once: %+v", c.Error)
	}
	answer = AllowAlways
	if c := runOwn(); c.Status != tools.StatusCompleted {
		t.Errorf("allow_always: %+v", c.Error)
	}
	n := asked.Load()
	approvers.Set(nil)
	if c := run(m); c.Status != tools.StatusCompleted || asked.Load() != n {
		t.Errorf("the call's allow_always was not remembered: %+v", c.Error)
	}
}
