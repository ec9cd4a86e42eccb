package integration

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools/mcp/mcptest"
)

// MCP servers asking the person (elicitation) and the model (sampling)
// during a call, through the real nexusd: the server is the go-sdk's
// mcptest.Asking over Streamable HTTP in this process, so that the test
// sees what it got.

// askingServer serves mcptest.Asking and returns it and its URL.
func askingServer(t *testing.T) (*mcptest.Asking, string) {
	a := &mcptest.Asking{Seen: make(chan mcptest.Outcome, 16)}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		srv.CloseClientConnections() // nexusd's open streams
		srv.Close()
	})
	return a, srv.URL
}

// seen is the next outcome the server saw.
func seen(t *testing.T, a *mcptest.Asking) mcptest.Outcome {
	t.Helper()
	select {
	case o := <-a.Seen:
		return o
	case <-time.After(60 * time.Second):
		t.Fatal("the MCP server saw no outcome")
	}
	return mcptest.Outcome{}
}

const askForm = `{"type":"object","properties":{` +
	`"name":{"type":"string","title":"Name","default":"John Doe"},` +
	`"age":{"type":"integer","minimum":0,"default":30},` +
	`"colour":{"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]},` +
	`"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]}},` +
	`"verified":{"type":"boolean","default":true},` +
	`"email":{"type":"string","format":"email"}` +
	`},"required":["email"]}`

func askArgsJSON(message string) string {
	b, _ := json.Marshal(map[string]string{"message": message, "schema": askForm})
	return string(b)
}

// elicitationParams are the params of nexus/requestElicitation.
type elicitationParams struct {
	RequestID string `json:"requestId"`
	Server    string `json:"server"`
	ToolCall  *struct {
		ToolCallID string `json:"toolCallId"`
		ToolName   string `json:"toolName"`
		Author     string `json:"author"`
	} `json:"toolCall"`
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	URL             string          `json:"url"`
}

// TestElicitationInTheEditor: the calls of the CLI (stdin not a terminal)
// and of an app reach the editor's nexus/requestElicitation, which names
// the server and the call; its accept (with the defaults filled in),
// decline and cancel reach the server; content that does not match the
// schema is refused; and a cancelled call withdraws its question
// ($/cancelRequest).
func TestElicitationInTheEditor(t *testing.T) {
	a, url := askingServer(t)
	ws := newWorkspace(t, "apps:\n  - id: planner\n")
	writeMCP(t, ws, `"asking": {"type": "http", "url": `+quote(url)+`}`)
	e := startEditor(t, ws)
	var (
		mu      sync.Mutex
		asked   []elicitationParams
		replyTo func(p elicitationParams) any
	)
	e.elicit = func(raw json.RawMessage) any {
		var p elicitationParams
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Errorf("nexus/requestElicitation params %s: %v", raw, err)
		}
		mu.Lock()
		asked = append(asked, p)
		fn := replyTo
		mu.Unlock()
		return fn(p)
	}
	reply := func(fn func(p elicitationParams) any) {
		mu.Lock()
		replyTo = fn
		mu.Unlock()
	}
	last := func() elicitationParams {
		mu.Lock()
		defer mu.Unlock()
		return asked[len(asked)-1]
	}
	var raw json.RawMessage
	e.mustCall("initialize", map[string]any{"processId": os.Getpid(), "capabilities": map[string]any{}}, &raw)
	e.notify("initialized", map[string]any{})
	var init struct {
		Capabilities struct {
			Nexus struct {
				RequestElicitation bool `json:"requestElicitation"`
			} `json:"nexus"`
		} `json:"capabilities"`
	}
	var res initResult
	json.Unmarshal(raw, &init)
	json.Unmarshal(raw, &res)
	if !init.Capabilities.Nexus.RequestElicitation {
		t.Fatalf("initialize does not report requestElicitation: %s", raw)
	}
	var pin string
	e.await("the server waiting for approval", 30*time.Second, func() bool {
		for _, n := range e.notes {
			var st struct{ Name, State, Pin string }
			if n.method == "nexus/mcpServerStatus" && json.Unmarshal(n.params, &st) == nil && st.State == "pending_approval" {
				pin = st.Pin
				return true
			}
		}
		return false
	})
	e.mustCall("nexus/mcp/trust", map[string]any{"name": "asking", "pin": pin}, nil)
	e.await("the server ready", 30*time.Second, func() bool {
		for _, n := range e.notes {
			if n.method == "nexus/mcpServerStatus" && strings.Contains(string(n.params), `"state":"ready"`) {
				return true
			}
		}
		return false
	})

	// Accept: the fields left out get their defaults.
	reply(func(elicitationParams) any {
		return map[string]any{"action": "accept", "content": map[string]any{"email": "ann@example.com", "tags": []string{"a", "c"}, "age": 41}}
	})
	out, errOut, code := nexus(t, ws, "", "tools", "run", "ask", "--server", "asking", "--args", askArgsJSON("Who are you?"))
	if code != 0 {
		t.Fatalf("nexus tools run: %d\n%s%s", code, out, errOut)
	}
	o := seen(t, a)
	var answer struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal([]byte(o.JSON), &answer); err != nil || answer.Action != "accept" {
		t.Fatalf("the server saw %+v", o)
	}
	for k, v := range map[string]any{"name": "John Doe", "age": 41.0, "verified": true, "email": "ann@example.com"} {
		if answer.Content[k] != v {
			t.Errorf("the server got %s = %v, want %v (content %v)", k, answer.Content[k], v, answer.Content)
		}
	}
	p := last()
	if p.Server != "asking" || p.Mode != "form" || p.Message != "Who are you?" || p.ToolCall == nil || p.ToolCall.ToolName != "ask" ||
		p.ToolCall.Author != "cli" || !strings.Contains(string(p.RequestedSchema), `"John Doe"`) || p.RequestID == "" {
		t.Errorf("nexus/requestElicitation params %+v", p)
	}
	if !strings.Contains(errOut, p.ToolCall.ToolCallID) {
		t.Errorf("the question names call %s, the CLI ran:\n%s", p.ToolCall.ToolCallID, errOut)
	}

	// An app's call: decline, then cancel.
	tok, err := os.ReadFile(ws + "/.nexus/run/apps/planner.token")
	if err != nil {
		t.Fatal(err)
	}
	conn, _ := grpcAdmin(t, res)
	app := as(strings.TrimSpace(string(tok)))
	for _, action := range []string{"decline", "cancel"} {
		reply(func(elicitationParams) any { return map[string]any{"action": action} })
		r, err := nexusv1.NewToolManagerClient(conn).ExecuteTool(app, &nexusv1.ExecuteToolRequest{ToolName: "ask", ServerName: "asking",
			ArgumentsJson: askArgsJSON("Go on?"), RequestingAppId: "planner"})
		if err != nil || !r.Success {
			t.Fatalf("%s: %v %v", action, r, err)
		}
		if o := seen(t, a); o.JSON != `{"action":"`+action+`"}` {
			t.Fatalf("%s: the server saw %+v", action, o)
		}
		if p := last(); p.ToolCall == nil || p.ToolCall.ToolCallID != r.ToolCallId || p.ToolCall.Author != "app:planner" {
			t.Errorf("the app's question names %+v, want call %s", p.ToolCall, r.ToolCallId)
		}
	}

	// Content that does not match the schema is refused: the server gets
	// an error, not the content.
	reply(func(elicitationParams) any {
		return map[string]any{"action": "accept", "content": map[string]any{"age": -3}}
	})
	_, errOut, code = nexus(t, ws, "", "tools", "run", "ask", "--server", "asking", "--args", askArgsJSON("Age?"))
	if code == 0 || !strings.Contains(errOut, "does not match the requested schema") {
		t.Errorf("an invalid answer: exit %d\n%s", code, errOut)
	}
	if o := seen(t, a); o.JSON != "" || !strings.Contains(o.Err, "does not match the requested schema") {
		t.Errorf("the server saw %+v", o)
	}

	// URL mode.
	reply(func(elicitationParams) any { return map[string]any{"action": "accept"} })
	if out, errOut, code := nexus(t, ws, "", "tools", "run", "ask_url", "--server", "asking", "--args", `{"message":"Sign in","url":"https://example.com/sign-in"}`); code != 0 {
		t.Fatalf("ask_url: %d\n%s%s", code, out, errOut)
	}
	if o := seen(t, a); o.JSON != `{"action":"accept"}` {
		t.Errorf("the server saw %+v", o)
	}
	if p := last(); p.Mode != "url" || p.URL != "https://example.com/sign-in" || len(p.RequestedSchema) != 0 {
		t.Errorf("URL question %+v", p)
	}

	// The call is cancelled while the editor shows the form: the question
	// is withdrawn with $/cancelRequest, and the call ends cancelled.
	asking := make(chan elicitationParams, 1)
	reply(func(p elicitationParams) any { asking <- p; return nil })
	done := make(chan string, 1)
	go func() {
		_, errOut, _ := nexus(t, ws, "", "tools", "run", "ask", "--server", "asking", "--args", askArgsJSON("Wait?"))
		done <- errOut
	}()
	p = <-asking
	e.mustCall("nexus/toolCalls/cancel", map[string]any{"toolCallId": p.ToolCall.ToolCallID}, nil)
	if errOut := <-done; !strings.Contains(errOut, "cancelled") {
		t.Errorf("the cancelled call:\n%s", errOut)
	}
	e.await("$/cancelRequest of the question", 30*time.Second, func() bool {
		for _, r := range e.requests {
			if r.method != "nexus/requestElicitation" || !strings.Contains(string(r.params), p.RequestID) {
				continue
			}
			for _, n := range e.notes {
				if n.method == "$/cancelRequest" && strings.Contains(string(n.params), `"id":`+string(r.id)) {
					return true
				}
			}
		}
		return false
	})
}

// TestElicitationNoPerson: no editor attached, an app's call whose server
// asks: declined at once, not left to hang.
func TestElicitationNoPerson(t *testing.T) {
	a, url := askingServer(t)
	ws := newWorkspace(t, "apps:\n  - id: planner\n    grants:\n      tools:\n        allow: [\"asking/*\"]\n")
	writeMCP(t, ws, `"asking": {"type": "http", "url": `+quote(url)+`}`)
	d := startDaemon(t, ws)
	d.trustMCP("asking")
	d.waitMCP("asking", "ready")
	start := time.Now()
	r, err := d.tools().ExecuteTool(as(d.appToken("planner")), &nexusv1.ExecuteToolRequest{ToolName: "ask", ServerName: "asking",
		ArgumentsJson: askArgsJSON("Anyone?"), RequestingAppId: "planner"})
	if err != nil || !r.Success {
		t.Fatalf("ExecuteTool: %v %v", r, err)
	}
	if o := seen(t, a); o.JSON != `{"action":"decline"}` {
		t.Errorf("the server saw %+v", o)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the decline took %v", d)
	}
	// nexus tools run without a terminal and no editor: declined too.
	out, errOut, code := nexus(t, ws, "", "tools", "run", "ask", "--server", "asking", "--args", askArgsJSON("Anyone?"))
	if code != 0 || !strings.Contains(out, `decline`) {
		t.Errorf("nexus tools run: %d\n%s%s", code, out, errOut)
	}
	seen(t, a)
}

// TestElicitationAtTheTerminal: nexus tools run --elicit ask asks on its
// terminal (here a pipe) field by field; accept-defaults and decline
// answer without asking.
func TestElicitationAtTheTerminal(t *testing.T) {
	a, url := askingServer(t)
	ws := newWorkspace(t, "")
	writeMCP(t, ws, `"asking": {"type": "http", "url": `+quote(url)+`}`)
	d := startDaemon(t, ws)
	d.trustMCP("asking")
	d.waitMCP("asking", "ready")

	// y: fill in; name: default; age: 7; colour: 2 (Green); tags: a,b;
	// verified: n; email: given.
	out, errOut, code := nexus(t, ws, "y\n\n7\n2\na,b\nn\nme@example.com\n", "tools", "run", "ask", "--server", "asking",
		"--elicit", "ask", "--args", askArgsJSON("Your details, please"))
	if code != 0 {
		t.Fatalf("nexus tools run --elicit ask: %d\n%s%s", code, out, errOut)
	}
	want := `{"action":"accept","content":{"age":7,"colour":"g","email":"me@example.com","name":"John Doe","tags":["a","b"],"verified":false}}`
	if o := seen(t, a); o.JSON != want {
		t.Errorf("the server saw %s\nwant %s\n%s", o.JSON, want, errOut)
	}
	for _, s := range []string{"MCP server asking asks (during the call ", "Your details, please", "Name [John Doe]: ", "colour: 1) Red  2) Green: "} {
		if !strings.Contains(errOut, s) {
			t.Errorf("the terminal lacks %q:\n%s", s, errOut)
		}
	}

	// accept-defaults: the required email has no default, so that form is
	// declined; a form whose every field has a default is accepted.
	out, errOut, code = nexus(t, ws, "", "tools", "run", "ask", "--server", "asking", "--elicit", "accept-defaults", "--args", askArgsJSON("Defaults?"))
	if o := seen(t, a); code != 0 || o.JSON != `{"action":"decline"}` || !strings.Contains(errOut, "cannot be accepted with the defaults") {
		t.Errorf("accept-defaults, a required field without a default: %d %+v\n%s%s", code, o, out, errOut)
	}
	all := `{"type":"object","properties":{"n":{"type":"integer","default":3},"s":{"type":"string","enum":["x","y"],"default":"y"}}}`
	args, _ := json.Marshal(map[string]string{"message": "Defaults?", "schema": all})
	out, errOut, code = nexus(t, ws, "", "tools", "run", "ask", "--server", "asking", "--elicit", "accept-defaults", "--args", string(args))
	if o := seen(t, a); code != 0 || o.JSON != `{"action":"accept","content":{"n":3,"s":"y"}}` {
		t.Errorf("accept-defaults: %d %+v\n%s%s", code, o, out, errOut)
	}
	_, _, code = nexus(t, ws, "", "tools", "run", "ask", "--server", "asking", "--elicit", "decline", "--args", string(args))
	if o := seen(t, a); code != 0 || o.JSON != `{"action":"decline"}` {
		t.Errorf("decline: %d %+v", code, o)
	}
	// Stdin ends before the form is filled: declined.
	nexus(t, ws, "y\n", "tools", "run", "ask", "--server", "asking", "--elicit", "ask", "--args", askArgsJSON("Half?"))
	if o := seen(t, a); o.JSON != `{"action":"decline"}` {
		t.Errorf("stdin ended: the server saw %+v", o)
	}
}
