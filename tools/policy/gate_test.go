package policy

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/access"
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

// editor is fn as the editor's approver: the person's.
func editor(fn AskFunc) Approver { return Approver{Who: access.Person("editor"), Ask: fn} }

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
	approvers.Set(editor(func(_ context.Context, call tools.Call, rec ICERC) (Answer, error) {
		asked.Add(1)
		if rec.Intent != "save the plan" || call.ICERC == nil || call.ToolName != "write_file" {
			t.Errorf("approver saw %+v / %+v", call, rec)
		}
		return answer, nil
	}))
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
	approvers.Set(editor(func(ctx context.Context, _ tools.Call, _ ICERC) (Answer, error) {
		<-ctx.Done() // the editor never answers
		return "", ctx.Err()
	}))
	if c := run(m); c.Error == nil || !strings.Contains(c.Error.Message, "no answer") {
		t.Errorf("timeout: %+v", c.Error)
	}
	approvers.Set(editor(func(context.Context, tools.Call, ICERC) (Answer, error) { return "", errors.New("editor went away") }))
	if c := run(m); c.Error == nil || !strings.Contains(c.Error.Message, "editor went away") {
		t.Errorf("error: %+v", c.Error)
	}
	approvers.Set(editor(func(context.Context, tools.Call, ICERC) (Answer, error) { return "sure", nil }))
	if c := run(m); c.Error == nil || c.Error.Code != tools.CodePermissionDenied {
		t.Errorf("bad answer: %+v", c.Error)
	}
}

// TestGateAsksTheCallsOwnApprover: an approver of the person in the
// call's context (WithApprover: the person's own MCP client) answers
// before the attached one, and its "always" is remembered like the
// editor's.
func TestGateAsksTheCallsOwnApprover(t *testing.T) {
	var approvers Approvers
	m := gateManager(t, &approvers, time.Minute)
	approvers.Set(editor(func(context.Context, tools.Call, ICERC) (Answer, error) {
		t.Error("the attached approver was asked about a call that brings its own")
		return RejectOnce, nil
	}))
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
		return m.Execute(WithApprover(context.Background(), Approver{Who: access.Person("mcp").Agent("mcp"), Ask: own}), tools.ExecuteRequest{ToolName: "write_file", AppID: "planner",
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
	approvers.Set(Approver{})
	if c := run(m); c.Status != tools.StatusCompleted || asked.Load() != n {
		t.Errorf("the call's allow_always was not remembered: %+v", c.Error)
	}
}

// TestGateOnlyThePersonAnswers: an approver that answers for an app — in
// the call's context, from Route, or attached — is never asked, not even
// about the app's own call; the question goes to the person (the editor),
// and without one it is denied saying the person was not reachable. An
// "always" the app tried to give is never remembered.
func TestGateOnlyThePersonAnswers(t *testing.T) {
	planner := access.ForApp(&access.App{ID: "planner"})
	for name, who := range map[string]access.Party{
		"the app":              planner,
		"an agent for the app": planner.Agent("s1"),
		"an MCP server for it": access.MCPServer("evil", "planner"),
		"no one (zero party)":  {},
	} {
		t.Run(name, func(t *testing.T) {
			if err := MayAnswer(who); !errors.Is(err, ErrNotThePerson) {
				t.Errorf("MayAnswer(%v) = %v", who, err)
			}
			var approvers Approvers
			m := gateManager(t, &approvers, time.Minute)
			var theirs atomic.Int32
			app := Approver{Who: who, Ask: func(context.Context, tools.Call, ICERC) (Answer, error) {
				theirs.Add(1)
				return AllowAlways, nil
			}}
			runWith := func(ctx context.Context) tools.Call {
				return m.Execute(ctx, tools.ExecuteRequest{ToolName: "write_file", AppID: "planner",
					Arguments: json.RawMessage(`{"path":"a.md"}`), Intent: "save the plan"})
			}
			approvers.Route(func(tools.Call) Approver { return app })
			approvers.Set(app)
			c := runWith(WithApprover(context.Background(), app))
			if c.Error == nil || c.Error.Code != tools.CodePermissionDenied || !strings.Contains(c.Error.Message, "no editor is attached to ask the person") {
				t.Errorf("no person to ask: %+v", c.Error)
			}
			var person atomic.Int32
			approvers.Set(editor(func(context.Context, tools.Call, ICERC) (Answer, error) {
				person.Add(1)
				return RejectOnce, nil
			}))
			if c := runWith(WithApprover(context.Background(), app)); c.Error == nil || !strings.Contains(c.Error.Message, "rejected") || person.Load() != 1 {
				t.Errorf("the person was not asked (%d), or did not decide: %+v", person.Load(), c.Error)
			}
			if theirs.Load() != 0 {
				t.Errorf("%v was asked %d times", who, theirs.Load())
			}
		})
	}
	for _, who := range []access.Party{access.Person("editor"), access.Person("cli"), access.Person("acp").Agent("s"), access.Person("mcp").Agent("mcp")} {
		if err := MayAnswer(who); err != nil {
			t.Errorf("MayAnswer(%v) = %v, want the person's surface to answer", who, err)
		}
	}
}

// TestGateAsksTheLastTerminal: a terminal attached with Attach is asked
// before the editor, the last attached first; one that detaches leaves the
// question to the one before it, in whatever order they detach; an app's
// approver attached as a terminal is passed over.
func TestGateAsksTheLastTerminal(t *testing.T) {
	var approvers Approvers
	m := gateManager(t, &approvers, time.Minute)
	var asked []string
	answerer := func(name string) AskFunc {
		return func(context.Context, tools.Call, ICERC) (Answer, error) {
			asked = append(asked, name)
			return AllowOnce, nil
		}
	}
	approvers.Set(editor(answerer("editor")))
	first := approvers.Attach(Approver{Who: access.Person("cli"), Ask: answerer("first")})
	second := approvers.Attach(Approver{Who: access.Person("cli"), Ask: answerer("second")})
	appDetach := approvers.Attach(Approver{Who: access.ForApp(&access.App{ID: "planner"}), Ask: answerer("app")})
	for _, step := range []func(){nil, second, first, appDetach} {
		if step != nil {
			step()
		}
		if c := run(m); c.Status != tools.StatusCompleted {
			t.Fatalf("call: %+v", c.Error)
		}
	}
	if want := []string{"second", "first", "editor", "editor"}; !slices.Equal(asked, want) {
		t.Errorf("asked %v, want %v", asked, want)
	}
	first() // a second detach changes nothing
	approvers.Set(Approver{})
	if c := run(m); c.Error == nil || !strings.Contains(c.Error.Message, "nor a terminal (nexus calls --watch --answer)") {
		t.Errorf("no one attached: %+v", c.Error)
	}
}

// TestGateAsksWhenAHookAsks: a preToolUse hook that asks makes an allowed
// call ask the person, with its reason in the record and no "always" to
// remember; it never lets a denied call through.
func TestGateAsksWhenAHookAsks(t *testing.T) {
	var approvers Approvers
	var seen []ICERC
	approvers.Set(editor(func(_ context.Context, _ tools.Call, rec ICERC) (Answer, error) {
		seen = append(seen, rec)
		return AllowAlways, nil
	}))
	p := New(Rules{Tools: map[string]Decision{"write_file": Allow, "delete_file": Deny}}, nil)
	gate := p.Gate(&approvers, time.Minute, nil)
	gr := func(name string) *tools.GateRequest {
		return &tools.GateRequest{Call: tools.Call{ToolName: name}, Tool: tools.Definition{Name: name, Kind: tools.KindEdit, Risk: tools.RiskLow},
			Args: json.RawMessage(`{"path":"a.md"}`), HookAsk: "notes.md is checked by hand"}
	}
	if err := gate(context.Background(), gr("write_file"), func(tools.ICERC) {}); err != nil {
		t.Fatalf("allowed after the person's answer: %v", err)
	}
	if len(seen) != 1 || seen[0].Always != "" || !slices.ContainsFunc(seen[0].Risk.Details, func(d string) bool { return strings.Contains(d, "notes.md is checked by hand") }) {
		t.Fatalf("the person saw %+v, want the hook's reason and nothing to remember", seen)
	}
	if err := gate(context.Background(), gr("delete_file"), func(tools.ICERC) {}); err == nil || len(seen) != 1 {
		t.Fatalf("a denied call with a hook that asks: %v (asked %d times)", err, len(seen))
	}
}
