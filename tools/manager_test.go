package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/events"
)

func allowAll(context.Context, *GateRequest, func(ICERC)) error { return nil }

func newTestManager(t *testing.T, gate Gate, tools ...Tool) (*Manager, *events.Bus) {
	t.Helper()
	bus := events.New()
	m, err := NewManager(Options{Bus: bus, Gate: gate, AuditFile: filepath.Join(t.TempDir(), "audit", "calls.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if err := m.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { m.Close() })
	return m, bus
}

var echoTool = Tool{
	Definition: Definition{Name: "echo", Title: "Echo", Kind: KindOther, Risk: RiskLow,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`)},
	Handler: func(_ context.Context, inv *Invocation, args json.RawMessage) (json.RawMessage, error) {
		var a struct{ Text string }
		json.Unmarshal(args, &a)
		inv.Progress(1, 2, "half")
		return json.Marshal(map[string]string{"text": a.Text, "author": inv.Author})
	},
}

// statuses collects the statuses a call went through on the bus.
func statuses(sub *events.Subscription, id string) []string {
	var out []string
	for {
		select {
		case ev := <-sub.C:
			c := ev.(Call)
			if c.ID != id {
				continue
			}
			out = append(out, c.Status)
			if c.Done() {
				return out
			}
		default:
			return out
		}
	}
}

func TestLifecycleAndEvents(t *testing.T) {
	m, bus := newTestManager(t, allowAll, echoTool)
	sub := bus.Subscribe(nil, 100)
	var updates []string
	c := m.Execute(context.Background(), ExecuteRequest{ToolName: "echo", Arguments: json.RawMessage(`{"text":"hi"}`),
		AppID: "a", Author: "app:a", TaskID: "t", RequestID: "r", OnUpdate: func(c Call) { updates = append(updates, c.Status) }})
	if c.Status != StatusCompleted || string(c.ResultJSON) != `{"author":"app:a","text":"hi"}` || c.Title != "Echo" {
		t.Fatalf("call = %+v", c)
	}
	if c.EndedAt.Before(c.StartedAt) || len(c.ID) != 36 || c.ID[14] != '7' {
		t.Errorf("timestamps or UUIDv7 id wrong: %+v", c)
	}
	want := "initiated running running completed" // the progress update is a change too
	if got := strings.Join(statuses(sub, c.ID), " "); got != want {
		t.Errorf("bus statuses = %q, want %q", got, want)
	}
	if got := strings.Join(updates, " "); got != want {
		t.Errorf("OnUpdate statuses = %q", got)
	}
	if got, ok := m.Get(c.ID); !ok || got.Status != StatusCompleted || got.Progress == nil || got.Progress.Message != "half" {
		t.Errorf("Get = %+v %v", got, ok)
	}
}

func TestErrorsHaveCodes(t *testing.T) {
	failing := Tool{Definition: Definition{Name: "fail", Risk: RiskLow}, Handler: func(context.Context, *Invocation, json.RawMessage) (json.RawMessage, error) {
		return nil, fmt.Errorf("disk on fire")
	}}
	big := Tool{Definition: Definition{Name: "big", Risk: RiskLow}, Handler: func(context.Context, *Invocation, json.RawMessage) (json.RawMessage, error) {
		return json.Marshal(strings.Repeat("x", 2<<20))
	}}
	deny := func(_ context.Context, req *GateRequest, set func(ICERC)) error {
		if req.Tool.Name == "fail" {
			return nil
		}
		set(ICERC{Intent: "i", Command: "c"})
		return Errorf(CodePermissionDenied, "no")
	}
	m, _ := newTestManager(t, allowAll, echoTool, failing, big)
	md, _ := newTestManager(t, deny, echoTool, failing)
	cases := []struct {
		m        *Manager
		tool     string
		server   string
		args     string
		code     string
		contains string
	}{
		{m, "nope", "", `{}`, CodeUnknownTool, `no core tool named "nope"`},
		{m, "echo", "srv", `{}`, CodeUnknownTool, `server "srv"`},
		{m, "echo", "", `{"text":1}`, CodeInvalidArguments, "schema"},
		{m, "echo", "", `{}`, CodeInvalidArguments, "text"},
		{m, "echo", "", `{"text":"a","extra":1}`, CodeInvalidArguments, "extra"},
		{m, "echo", "", `not json`, CodeInvalidArguments, "not valid JSON"},
		{m, "fail", "", `{}`, CodeExecutionFailed, "disk on fire"},
		{m, "big", "", `{}`, CodeOutputLimit, "over the limit"},
		{md, "echo", "", `{"text":"a"}`, CodePermissionDenied, "no"},
	}
	for _, c := range cases {
		call := c.m.Execute(context.Background(), ExecuteRequest{ToolName: c.tool, ServerName: c.server, Arguments: json.RawMessage(c.args)})
		if call.Status != StatusError || call.Error == nil || call.Error.Code != c.code || !strings.Contains(call.Error.Message, c.contains) {
			t.Errorf("%s %s: %+v, want %s containing %q", c.tool, c.args, call.Error, c.code, c.contains)
		}
	}
	if c := md.Calls(CallFilter{})[0]; c.ICERC == nil || c.ICERC.Intent != "i" {
		t.Errorf("ICERC not recorded on the denied call: %+v", c)
	}
}

func blockingTool(started chan<- string) Tool {
	return Tool{Definition: Definition{Name: "block", Risk: RiskLow}, Timeout: -1,
		Handler: func(ctx context.Context, inv *Invocation, _ json.RawMessage) (json.RawMessage, error) {
			started <- inv.CallID
			<-ctx.Done()
			return nil, ctx.Err()
		}}
}

func TestCancelAndTimeout(t *testing.T) {
	started := make(chan string, 1)
	slow := Tool{Definition: Definition{Name: "slow", Risk: RiskLow}, Timeout: 20 * time.Millisecond,
		Handler: func(ctx context.Context, _ *Invocation, _ json.RawMessage) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
	m, _ := newTestManager(t, allowAll, blockingTool(started), slow)
	done := make(chan Call)
	go func() { done <- m.Execute(context.Background(), ExecuteRequest{ToolName: "block"}) }()
	id := <-started
	if c, _ := m.Get(id); c.Status != StatusRunning {
		t.Errorf("status while running = %s", c.Status)
	}
	if !m.Cancel(id) {
		t.Fatal("Cancel found no running call")
	}
	if c := <-done; c.Error == nil || c.Error.Code != CodeCancelled {
		t.Errorf("cancelled call = %+v", c)
	}
	if m.Cancel(id) {
		t.Error("Cancel of a finished call reported true")
	}
	if c := m.Execute(context.Background(), ExecuteRequest{ToolName: "slow"}); c.Error == nil || c.Error.Code != CodeTimeout {
		t.Errorf("timed out call = %+v", c.Error)
	}
	// The caller going away cancels too.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- m.Execute(ctx, ExecuteRequest{ToolName: "block"}) }()
	<-started
	cancel()
	if c := <-done; c.Error == nil || c.Error.Code != CodeCancelled {
		t.Errorf("caller gone: %+v", c.Error)
	}
}

func TestCancelWhileWaitingForPermission(t *testing.T) {
	asked := make(chan string, 1)
	gate := func(ctx context.Context, req *GateRequest, set func(ICERC)) error {
		set(ICERC{Intent: "x"})
		asked <- req.Call.ID
		<-ctx.Done()
		return Errorf(CodePermissionDenied, "no answer")
	}
	m, _ := newTestManager(t, gate, echoTool)
	done := make(chan Call)
	go func() {
		done <- m.Execute(context.Background(), ExecuteRequest{ToolName: "echo", Arguments: json.RawMessage(`{"text":"a"}`)})
	}()
	id := <-asked
	if c, _ := m.Get(id); c.Status != StatusInitiated || c.ICERC == nil {
		t.Errorf("while asking: %+v", c)
	}
	m.Cancel(id)
	if c := <-done; c.Error == nil || c.Error.Code != CodeCancelled {
		t.Errorf("%+v", c.Error)
	}
}

func TestManyConcurrentCalls(t *testing.T) {
	m, bus := newTestManager(t, allowAll, echoTool)
	sub := bus.Subscribe(nil, 10000)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			c := m.Execute(context.Background(), ExecuteRequest{ToolName: "echo", AppID: fmt.Sprint("app", i%3),
				Arguments: json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i))})
			if c.Status != StatusCompleted {
				t.Errorf("call %d: %+v", i, c.Error)
			}
		})
	}
	wg.Wait()
	finals := 0
	for len(sub.C) > 0 {
		if (<-sub.C).(Call).Done() {
			finals++
		}
	}
	if finals != 100 {
		t.Errorf("%d final events, want 100", finals)
	}
	if got := len(m.Calls(CallFilter{AppID: "app1"})); got != 33 {
		t.Errorf("calls of app1 = %d, want 33", got)
	}
	if got := m.Calls(CallFilter{Limit: 5}); len(got) != 5 || got[0].ID < got[4].ID {
		t.Errorf("newest first, limit 5: %d", len(got))
	}
}

func TestAuditLogRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	m, err := NewManager(Options{Gate: allowAll, AuditFile: path, AuditMaxSize: 2000})
	if err != nil {
		t.Fatal(err)
	}
	m.Register(echoTool)
	var ids []string
	for i := range 40 {
		ids = append(ids, m.Execute(context.Background(), ExecuteRequest{ToolName: "echo", Arguments: json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i))}).ID)
	}
	m.Close()
	var seen []string
	for _, p := range []string{path + ".3", path + ".2", path + ".1", path} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if info, _ := f.Stat(); info.Size() > 2000 {
			t.Errorf("%s is %d bytes, over the rotation size", p, info.Size())
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var c Call
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil || c.Status != StatusCompleted {
				t.Errorf("audit line %q: %v", sc.Text(), err)
			}
			seen = append(seen, c.ID)
		}
		f.Close()
	}
	// The newest calls are all there, in order; the oldest rotated away.
	if len(seen) == 0 || seen[len(seen)-1] != ids[len(ids)-1] || len(seen) >= 40 {
		t.Errorf("audit holds %d calls, last %v", len(seen), seen[len(seen)-1:])
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			t.Errorf("audit out of order at %d", i)
		}
	}
}

func TestRegisterRefusesBadTools(t *testing.T) {
	m, _ := newTestManager(t, allowAll, echoTool)
	for _, tl := range []Tool{
		echoTool, // duplicate
		{Definition: Definition{Name: "x", Risk: "extreme"}, Handler: echoTool.Handler},
		{Definition: Definition{Name: "x", Risk: RiskLow, InputSchema: json.RawMessage(`{"type":`)}, Handler: echoTool.Handler},
		{Definition: Definition{Name: "", Risk: RiskLow}, Handler: echoTool.Handler},
	} {
		if err := m.Register(tl); err == nil {
			t.Errorf("Register(%q risk %q) succeeded", tl.Name, tl.Risk)
		}
	}
	// The same name on another server is another tool.
	other := echoTool
	other.ServerName = "srv"
	if err := m.Register(other); err != nil {
		t.Fatal(err)
	}
	if got := len(m.List("")); got != 2 {
		t.Errorf("List = %d tools", got)
	}
	if got := m.List("srv"); len(got) != 1 || got[0].ServerName != "srv" {
		t.Errorf("List(srv) = %v", got)
	}
}
