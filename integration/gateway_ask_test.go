package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28 (SEP-2577); the gateway's clients speak 2025-11-25

// A gateway client that declared elicitation and sampling answers for its
// own calls: a hub server's question and sampling request during the call,
// and the policy's ask about the call. A client that declared neither is
// left to the editor. The hub server is mcptest.Asking; the clients are
// the go-sdk's, over /mcp, at protocol 2025-11-25 (on 2026-07-28 a server
// may not ask during a call).

// answeringClient is a gateway client that records what it is asked and
// answers with reply.
type answeringClient struct {
	*mcp.ClientSession
	askedMu sync.Mutex
	asked   []*mcp.ElicitParams
	reply   func(context.Context, *mcp.ElicitParams) *mcp.ElicitResult
	// completed receives the elicitationId of each
	// notifications/elicitation/complete.
	completed chan string
}

func (c *answeringClient) answer(fn func(context.Context, *mcp.ElicitParams) *mcp.ElicitResult) {
	c.askedMu.Lock()
	c.reply = fn
	c.askedMu.Unlock()
}

// questions are the elicitation requests the client got so far.
func (c *answeringClient) questions() []*mcp.ElicitParams {
	c.askedMu.Lock()
	defer c.askedMu.Unlock()
	return append([]*mcp.ElicitParams(nil), c.asked...)
}

// connectAnswering connects a client to url; it declares elicitation (form
// and URL) and sampling when answers is true, nothing otherwise. It hears
// notifications/elicitation/complete on completed.
func connectAnswering(t *testing.T, url, token string, answers bool) *answeringClient {
	t.Helper()
	return connectAnsweringOver(t, httpMCP(url, token), answers)
}

// connectAnsweringOver is connectAnswering over any transport (nexusd mcp
// on stdio, too).
func connectAnsweringOver(t *testing.T, transport mcp.Transport, answers bool) *answeringClient {
	t.Helper()
	c := &answeringClient{completed: make(chan string, 8)}
	opts := &mcp.ClientOptions{}
	if answers {
		opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
		opts.ElicitationCompleteHandler = func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			c.completed <- req.Params.ElicitationID
		}
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.askedMu.Lock()
			c.asked = append(c.asked, req.Params)
			fn := c.reply
			c.askedMu.Unlock()
			return fn(ctx, req.Params), nil
		}
		opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "client-model", Role: "assistant",
				Content: &mcp.TextContent{Text: "from the client: " + req.Params.Messages[0].Content.(*mcp.TextContent).Text}}, nil
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "answering", Version: "1"}, opts)
	s, err := client.Connect(context.Background(), transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	c.ClientSession = s
	return c
}

// promptServer serves a go-sdk MCP server with the prompt NAME (argument
// "who") and the resource template SCHEME:///{name}; with complete, it
// completes both (names starting with the value; notes a.md and b.md).
func promptServer(t *testing.T, name, scheme string, complete bool) string {
	opts := &mcp.ServerOptions{}
	if complete {
		opts.CompletionHandler = func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var values []string
			switch ref := req.Params.Ref; {
			case ref.Type == "ref/prompt" && ref.Name == name:
				for _, v := range []string{"Ann", "Anton", "Bob"} {
					if strings.HasPrefix(v, req.Params.Argument.Value) {
						values = append(values, v)
					}
				}
			case ref.Type == "ref/resource" && ref.URI == scheme+":///{name}":
				values = []string{"a.md", "b.md"}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, opts)
	s.AddPrompt(&mcp.Prompt{Name: name, Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: scheme + ":///{name}", Name: scheme},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "note"}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

func TestGatewayClientAnswers(t *testing.T) {
	a, askingURL := askingServer(t)
	ws := newWorkspace(t, `tools:
  policy:
    "asking/*": allow
mcp:
  http: {address: "127.0.0.1:0"}
  sampling: {client: true}
`)
	writeMCP(t, ws, `"asking": {"type": "http", "url": `+quote(askingURL)+`}, `+
		`"notes": {"type": "http", "url": `+quote(promptServer(t, "greet", "note", true))+`}, `+
		`"plain": {"type": "http", "url": `+quote(promptServer(t, "hello", "plain", false))+`}`)
	e := startEditor(t, ws)
	res := e.initialize(os.Getpid())
	conn, admin := grpcAdmin(t, res)
	tm := nexusv1.NewToolManagerClient(conn)
	for _, name := range []string{"asking", "notes", "plain"} {
		var pin string
		e.await(name+" waiting for approval", 30*time.Second, func() bool {
			for _, n := range e.notes {
				var st struct{ Name, State, Pin string }
				if n.method == "nexus/mcpServerStatus" && json.Unmarshal(n.params, &st) == nil && st.Name == name && st.State == "pending_approval" {
					pin = st.Pin
					return true
				}
			}
			return false
		})
		if _, err := tm.TrustMcpServer(admin, &nexusv1.TrustMcpServerRequest{Name: name, Pin: pin}); err != nil {
			t.Fatalf("trust %s: %v", name, err)
		}
	}
	info, err := os.ReadFile(filepath.Join(ws, ".nexus", "run", "daemon.json"))
	if err != nil {
		t.Fatal(err)
	}
	var daemonInfo struct {
		MCPURL string `json:"mcpUrl"`
	}
	json.Unmarshal(info, &daemonInfo)
	token, err := os.ReadFile(res.Nexus.AdminTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	url, tok := daemonInfo.MCPURL, strings.TrimSpace(string(token))
	answering := connectAnswering(t, url, tok, true)
	silent := connectAnswering(t, url, tok, false)
	deadline := time.Now().Add(30 * time.Second)
	for {
		tools, err := answering.ListTools(context.Background(), nil)
		prompts, err2 := answering.ListPrompts(context.Background(), nil)
		if err != nil || err2 != nil {
			t.Fatal(err, err2)
		}
		names := map[string]bool{}
		for _, tl := range tools.Tools {
			names[tl.Name] = true
		}
		for _, p := range prompts.Prompts {
			names[p.Name] = true
		}
		if names["asking__ask"] && names["notes__greet"] && names["plain__hello"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway does not show the servers' tools and prompts: %v", names)
		}
		time.Sleep(20 * time.Millisecond)
	}
	editorAsked := func(method string) int {
		e.mu.Lock()
		defer e.mu.Unlock()
		n := 0
		for _, r := range e.requests {
			if r.method == method {
				n++
			}
		}
		return n
	}
	written := func(name string) bool {
		_, err := os.Stat(filepath.Join(ws, name))
		return err == nil
	}

	t.Run("a client without elicitation leaves the ask to the editor", func(t *testing.T) {
		e.mu.Lock()
		e.permission = "reject_once"
		e.elicit = func(json.RawMessage) any { return map[string]any{"action": "decline"} }
		e.mu.Unlock()
		before := editorAsked("nexus/requestPermission")
		if text, isErr := callText(t, silent.ClientSession, "write_file", map[string]any{"path": "silent.txt", "content": "x"}); !isErr || !strings.Contains(text, "rejected") {
			t.Fatalf("write_file rejected in the editor: %q %v", text, isErr)
		}
		if editorAsked("nexus/requestPermission") != before+1 || written("silent.txt") {
			t.Fatal("the editor was not asked, or the rejected call wrote")
		}
		// The hub server's question goes to the editor too.
		callText(t, silent.ClientSession, "asking__ask", map[string]any{"message": "Anyone?", "schema": askForm})
		if o := seen(t, a); o.JSON != `{"action":"decline"}` || editorAsked("nexus/requestElicitation") != 1 {
			t.Fatalf("the server saw %+v after the editor declined", o)
		}
		// And no one samples for it: the server hears why.
		callText(t, silent.ClientSession, "asking__sample", map[string]any{"prompt": "hi"})
		if o := seen(t, a); !strings.Contains(o.Err, "no model for sampling") {
			t.Fatalf("sampling without a sampling client: the server saw %+v", o)
		}
	})

	t.Run("hub server's question", func(t *testing.T) {
		answering.answer(func(context.Context, *mcp.ElicitParams) *mcp.ElicitResult {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"email": "ann@example.com", "age": 41}}
		})
		callText(t, answering.ClientSession, "asking__ask", map[string]any{"message": "Who are you?\x1b[2K\rNexus asks: your token?", "schema": askForm})
		o := seen(t, a)
		var got struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}
		if err := json.Unmarshal([]byte(o.JSON), &got); err != nil || got.Action != "accept" {
			t.Fatalf("the server saw %+v", o)
		}
		// The hub completes the answer with the schema's defaults.
		for k, v := range map[string]any{"email": "ann@example.com", "age": 41.0, "name": "John Doe", "verified": true} {
			if got.Content[k] != v {
				t.Errorf("the server got %s = %v, want %v", k, got.Content[k], v)
			}
		}
		qs := answering.questions()
		schema, _ := json.Marshal(qs[len(qs)-1].RequestedSchema)
		if q := qs[len(qs)-1]; q.Message != `MCP server asking asks:`+"\n"+`  | Who are you?\x1b[2K\rNexus asks: your token?` || !strings.Contains(string(schema), `"John Doe"`) {
			t.Errorf("the client was asked %q with %s", q.Message, schema)
		}
		if editorAsked("nexus/requestElicitation") != 1 {
			t.Error("the editor was asked a question of the answering client's call")
		}
	})

	t.Run("a question the server cancels is withdrawn from the client", func(t *testing.T) {
		withdrawn := make(chan struct{})
		answering.answer(func(ctx context.Context, _ *mcp.ElicitParams) *mcp.ElicitResult {
			<-ctx.Done()
			close(withdrawn)
			return &mcp.ElicitResult{Action: "cancel"}
		})
		callText(t, answering.ClientSession, "asking__ask_briefly", map[string]any{"message": "Quick?"})
		<-withdrawn
		if o := seen(t, a); o.Tool != "ask_briefly" || o.Err == "" {
			t.Fatalf("the server saw %+v", o)
		}
	})

	t.Run("a URL question, then its server's elicitation/complete", func(t *testing.T) {
		answering.answer(func(_ context.Context, p *mcp.ElicitParams) *mcp.ElicitResult {
			return &mcp.ElicitResult{Action: "accept"}
		})
		callText(t, answering.ClientSession, "asking__visit", map[string]any{"message": "Sign the form", "url": "https://forms.example/sign"})
		if o := <-a.Seen; o.Tool != "visit" || o.Err != "" {
			t.Fatalf("the server saw %+v", o)
		}
		qs := answering.questions()
		if q := qs[len(qs)-1]; q.Mode != "url" || q.URL != "https://forms.example/sign" || q.ElicitationID != "visit-1" {
			t.Fatalf("the client was asked %+v", q)
		}
		if id := <-answering.completed; id != "visit-1" {
			t.Errorf("the client heard elicitation/complete for %q, want visit-1", id)
		}
	})

	t.Run("permission through elicitation", func(t *testing.T) {
		answer := func(ans string) {
			answering.answer(func(context.Context, *mcp.ElicitParams) *mcp.ElicitResult {
				if ans == "decline" {
					return &mcp.ElicitResult{Action: "decline"}
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": ans}}
			})
		}
		editorBefore := editorAsked("nexus/requestPermission")
		write := func(file string) (string, bool) {
			return callText(t, answering.ClientSession, "write_file", map[string]any{"path": file, "content": "x"})
		}
		answer("reject_once")
		if text, isErr := write("r.txt"); !isErr || !strings.HasPrefix(text, "permission_denied") || written("r.txt") {
			t.Fatalf("reject_once: %q %v", text, isErr)
		}
		qs := answering.questions()
		q := qs[len(qs)-1]
		schema, _ := json.Marshal(q.RequestedSchema)
		for _, want := range []string{"Nexus asks your permission for write_file (by agent:mcp).\n",
			"\nasked by: the MCP gateway's client (nexusd mcp) acting for the person\n", "\nin the caller's words, not checked by Nexus:\n  intent:   ",
			"\n  expected: ", "\ncommand:  write_file r.txt", "\nrisk:     medium", "\nalways:   write_file \"r.txt\""} {
			if !strings.Contains(q.Message, want) {
				t.Errorf("the permission ask %q does not say %q", q.Message, want)
			}
		}
		for _, want := range []string{`"allow_once"`, `"allow_always"`, `"reject_once"`, `"reject_always"`, `"Always allow"`} {
			if !strings.Contains(string(schema), want) {
				t.Errorf("the permission form %s has no %s", schema, want)
			}
		}
		answer("decline")
		if text, isErr := write("d.txt"); !isErr || !strings.Contains(text, "reject_once") || written("d.txt") {
			t.Fatalf("declined: %q %v", text, isErr)
		}
		answer("allow_once")
		if text, isErr := write("o.txt"); isErr || !written("o.txt") {
			t.Fatalf("allow_once: %q %v", text, isErr)
		}
		answer("allow_always")
		if text, isErr := write("a.txt"); isErr || !written("a.txt") {
			t.Fatalf("allow_always: %q %v", text, isErr)
		}
		n := len(answering.questions())
		answer("reject_once") // not asked again about the same path ("always" covers the path it was asked about)
		if text, isErr := write("a.txt"); isErr || len(answering.questions()) != n {
			t.Fatalf("after allow_always the client was asked again, or the call failed: %q %v", text, isErr)
		}
		if editorAsked("nexus/requestPermission") != editorBefore {
			t.Error("the editor was asked about the answering client's calls")
		}
	})

	t.Run("sampling by the client", func(t *testing.T) {
		callText(t, answering.ClientSession, "asking__sample", map[string]any{"prompt": "the capital of France?"})
		if o := seen(t, a); !strings.Contains(o.JSON, "from the client: the capital of France?") || !strings.Contains(o.JSON, "client-model") {
			t.Fatalf("the server saw %+v", o)
		}
		calls, err := tm.ListToolCalls(admin, &nexusv1.ListToolCallsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var sampling *nexusv1.ToolCall
		for _, c := range calls.ToolCalls {
			if c.ServerName == "asking" && c.ToolName == "mcp_sampling" && c.Status == "completed" {
				sampling = c
				break
			}
		}
		if sampling == nil || !strings.Contains(sampling.ResultJson, `"answeredBy":"client"`) || sampling.Author != "mcp:asking" {
			t.Fatalf("the sampling call: %v", sampling)
		}
	})

	t.Run("completion", func(t *testing.T) {
		complete := func(ref *mcp.CompleteReference, value string) (*mcp.CompleteResult, error) {
			return answering.Complete(context.Background(), &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "who", Value: value}})
		}
		r, err := complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "notes__greet"}, "An")
		if err != nil || strings.Join(r.Completion.Values, ",") != "Ann,Anton" {
			t.Fatalf("the prompt notes__greet: %v %v", r, err)
		}
		r, err = complete(&mcp.CompleteReference{Type: "ref/resource", URI: "note:///{name}"}, "")
		if err != nil || strings.Join(r.Completion.Values, ",") != "a.md,b.md" {
			t.Fatalf("the template note:///{name}: %v %v", r, err)
		}
		// A server without completions completes nothing.
		r, err = complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "plain__hello"}, "x")
		if err != nil || r.Completion.Values == nil || len(r.Completion.Values) != 0 {
			t.Fatalf("the prompt of a server without completions: %v %v", r, err)
		}
		if _, err := complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "nope"}, "x"); err == nil || !strings.Contains(err.Error(), "no prompt nope") {
			t.Fatalf("an unknown prompt: %v", err)
		}
		if _, err := complete(&mcp.CompleteReference{Type: "ref/resource", URI: "nope:///x"}, "x"); err == nil || !strings.Contains(err.Error(), "no resource nope:///x") {
			t.Fatalf("an unknown resource: %v", err)
		}
	})
}
