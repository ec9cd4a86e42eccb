package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// parts are the daemon parts a test server runs on: real stores on disk,
// a real ToolManager with test tools, and the policy gate.
type parts struct {
	dir       string
	bus       *events.Bus
	defs      *state.Definitions
	rt        *state.RuntimeStore
	tools     *tools.Manager
	approvers *policy.Approvers
}

var testSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"steps":{"type":"integer"}},"additionalProperties":false}`)

func newParts(t testing.TB) *parts {
	t.Helper()
	dir := t.TempDir()
	p := &parts{dir: dir, bus: events.New(), approvers: &policy.Approvers{}}
	var err error
	p.defs, err = state.OpenDefinitions(state.DefinitionsOptions{Dir: filepath.Join(dir, "defs"), HistoryDir: filepath.Join(dir, "history.git"), Bus: p.bus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.defs.Close() })
	p.rt, err = state.OpenRuntime(filepath.Join(dir, "runtime.db"), state.RuntimeOptions{Bus: p.bus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.rt.Close() })
	approvals, err := policy.OpenApprovals(filepath.Join(dir, "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	pol := policy.New(policy.Rules{Tools: map[string]policy.Decision{"guarded": policy.Ask}}, approvals)
	p.tools, err = tools.NewManager(tools.Options{Bus: p.bus, Gate: pol.Gate(p.approvers, 5*time.Second, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.tools.Close() })
	echo := func(ctx context.Context, inv *tools.Invocation, args json.RawMessage) (json.RawMessage, error) {
		return args, nil
	}
	for _, tool := range []tools.Tool{
		{Definition: tools.Definition{Name: "echo", Description: "returns its arguments", InputSchema: testSchema, Kind: tools.KindOther, Risk: tools.RiskLow}, Handler: echo},
		{Definition: tools.Definition{Name: "guarded", Description: "asks first", InputSchema: testSchema, Kind: tools.KindEdit, Risk: tools.RiskHigh}, Handler: echo},
		{Definition: tools.Definition{Name: "slow", Description: "reports progress, then waits to be cancelled", InputSchema: testSchema, Kind: tools.KindOther, Risk: tools.RiskLow},
			Timeout: -1,
			Handler: func(ctx context.Context, inv *tools.Invocation, args json.RawMessage) (json.RawMessage, error) {
				inv.Progress(1, 4, "first step")
				<-ctx.Done()
				return nil, ctx.Err()
			}},
	} {
		if err := p.tools.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p *parts) options() Options {
	return Options{Definitions: p.defs, Runtime: p.rt, Tools: p.tools, Bus: p.bus, Approvers: p.approvers, Apps: []string{"app1"},
		Info: Info{Version: "test", Workspace: p.dir, GRPCAddress: "unix:///nowhere.sock"}}
}

// served is a server running on pipes, with the test's ends of them.
type served struct {
	srv    *Server
	toSrv  *os.File // the server's stdin, written by the test
	fromSv *os.File // the server's stdout, read by the test
	done   chan struct{}
	code   int
	err    error
}

func serve(t testing.TB, opts Options) *served {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &served{srv: New(opts), toSrv: inW, fromSv: outR, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.code, s.err = s.srv.Serve(context.Background(), inR, outW, func() error {
			inR.Close()
			return outW.Close()
		})
	}()
	t.Cleanup(func() {
		inW.Close()
		<-s.done
		outR.Close()
	})
	return s
}

// wait returns the server's exit code once Serve returned.
func (s *served) wait(t testing.TB) int {
	t.Helper()
	<-s.done
	return s.code
}

// client is the editor's end: a jsonrpc2 connection that records what the
// server sends and answers nexus/requestPermission with answer().
type client struct {
	conn jsonrpc2.Conn

	mu    sync.Mutex
	notes []note
	asked []json.RawMessage
	// unannounced counts prompts for a call no nexus/toolCall had named.
	unannounced int
	answer      func(params json.RawMessage) (any, error)
	// trustAsked are the params of nexus/requestMcpTrust, answered with
	// trustAnswer (default: an error, as an editor without the method).
	trustAsked  []json.RawMessage
	trustAnswer func(params json.RawMessage) (any, error)
	// requests answers other requests of the daemon by method; the
	// request is recorded as a note too (default: a null result).
	requests map[string]func(params json.RawMessage) (any, error)
	change   chan struct{}
}

type note struct {
	method string
	params json.RawMessage
}

type pipeRWC struct {
	io.Reader
	io.Writer
	closers []io.Closer
}

func (p pipeRWC) Close() error {
	for _, c := range p.closers {
		c.Close()
	}
	return nil
}

func connect(t testing.TB, s *served) *client {
	t.Helper()
	c := &client{change: make(chan struct{}, 1)}
	c.answer = func(json.RawMessage) (any, error) { return "reject_once", nil }
	c.conn = jsonrpc2.NewConn(jsonrpc2.NewStream(pipeRWC{Reader: s.fromSv, Writer: s.toSrv, closers: []io.Closer{s.toSrv}}), jsonrpc2.WithCodec(stdCodec{}))
	c.conn.Go(context.Background(), func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		params := json.RawMessage(append([]byte(nil), req.Params()...))
		if req.Method() == requestPermission {
			c.mu.Lock()
			var p permissionParams
			json.Unmarshal(params, &p)
			if p.ToolCall == nil || !has(c.notes, notifyToolCall, p.ToolCall.ToolCallID, `"icerc"`) {
				c.unannounced++
			}
			c.asked = append(c.asked, params)
			answer := c.answer
			c.mu.Unlock()
			c.signal()
			jsonrpc2.Async(ctx)
			return answer(params)
		}
		if req.Method() == requestMcpTrust {
			c.mu.Lock()
			c.trustAsked = append(c.trustAsked, params)
			answer := c.trustAnswer
			c.mu.Unlock()
			c.signal()
			jsonrpc2.Async(ctx)
			if answer == nil {
				return nil, jsonrpc2.NewError(jsonrpc2.MethodNotFound, "not an editor method")
			}
			return answer(params)
		}
		c.mu.Lock()
		c.notes = append(c.notes, note{strings.Clone(req.Method()), params})
		handle := c.requests[req.Method()]
		c.mu.Unlock()
		c.signal()
		if handle != nil {
			jsonrpc2.Async(ctx)
			return handle(params)
		}
		return nil, nil
	})
	return c
}

func (c *client) signal() {
	select {
	case c.change <- struct{}{}:
	default:
	}
}

// await waits until cond holds over the notifications received so far.
func (c *client) await(t testing.TB, what string, cond func([]note) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second) // a hung test fails rather than waits forever
	for {
		c.mu.Lock()
		ok := cond(c.notes)
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-c.change:
		case <-deadline:
			c.mu.Lock()
			defer c.mu.Unlock()
			var got []string
			for _, n := range c.notes {
				got = append(got, n.method+" "+clip(string(n.params)))
			}
			t.Fatalf("never saw %s; got:\n%s", what, strings.Join(got, "\n"))
		}
	}
}

func (c *client) call(t testing.TB, method string, params, result any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.conn.Call(ctx, method, params, result)
	return err
}

func (c *client) mustCall(t testing.TB, method string, params, result any) {
	t.Helper()
	if err := c.call(t, method, params, result); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

func (c *client) initialize(t testing.TB) map[string]any {
	t.Helper()
	var res map[string]any
	c.mustCall(t, "initialize", map[string]any{"processId": os.Getpid(), "clientInfo": map[string]string{"name": "test"},
		"capabilities": map[string]any{}}, &res)
	if err := c.conn.Notify(context.Background(), "initialized", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	return res
}

// code returns the JSON-RPC error code of err, or 0.
func code(err error) jsonrpc2.Code {
	var we *jsonrpc2.Error
	if err != nil && errors.As(err, &we) {
		return we.Code
	}
	return 0
}
