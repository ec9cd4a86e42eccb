package mcp

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp/mcptest"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// TestMain makes the test binary the asking server over stdio when
// NEXUS_TEST_ASKING is set: a real go-sdk server in a process of its own.
// askingStdio is the asking server over stdio (this test binary).
func askingStdio(t *testing.T) ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := stdio("asking", exe)
	cfg.Env = map[string]string{"NEXUS_TEST_ASKING": "stdio"}
	return cfg
}

// askingHTTP is the asking server over Streamable HTTP, in this process.
func askingHTTP(t *testing.T) (ServerConfig, *mcptest.Asking) {
	a := &mcptest.Asking{Seen: make(chan mcptest.Outcome, 16)}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		srv.CloseClientConnections() // the hub's open streams
		srv.Close()
	})
	return ServerConfig{Name: "asking", Source: "test", Transport: "http", URL: srv.URL, Enabled: true}, a
}

// person is an elicitor that records the questions and answers with
// answer (or waits for ctx when answer is nil).
type person struct {
	mu        sync.Mutex
	questions []*tools.Elicitation
	asked     chan *tools.Elicitation
	withdrawn chan string
	answer    func(q *tools.Elicitation) tools.ElicitResult
}

func newPerson(answer func(q *tools.Elicitation) tools.ElicitResult) *person {
	return &person{asked: make(chan *tools.Elicitation, 8), withdrawn: make(chan string, 8), answer: answer}
}

func (p *person) elicit(ctx context.Context, q *tools.Elicitation) (tools.ElicitResult, error) {
	p.mu.Lock()
	p.questions = append(p.questions, q)
	p.mu.Unlock()
	p.asked <- q
	if p.answer != nil {
		return p.answer(q), nil
	}
	<-ctx.Done()
	p.withdrawn <- q.ID
	return tools.ElicitResult{}, ctx.Err()
}

const formSchema = `{"type":"object","properties":{` +
	`"name":{"type":"string","title":"Name","default":"John Doe"},` +
	`"age":{"type":"integer","minimum":0,"default":30},` +
	`"score":{"type":"number","default":95.5},` +
	`"status":{"type":"string","enum":["active","inactive"],"default":"active"},` +
	`"verified":{"type":"boolean","default":true},` +
	`"colour":{"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]},` +
	`"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]}},` +
	`"email":{"type":"string","format":"email"}` +
	`},"required":["email"]}`

func askArgs(schema string) string {
	b, _ := json.Marshal(map[string]string{"message": "Who are you?", "schema": schema})
	return string(b)
}

func TestElicitationOverStdioAndHTTP(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			th := newTestHub(t, Options{Elicitation: true})
			cfg, _ := askingHTTP(t)
			if transport == "stdio" {
				cfg = askingStdio(t)
			}
			p := newPerson(func(q *tools.Elicitation) tools.ElicitResult {
				return tools.ElicitResult{Action: tools.ElicitAccept, Content: map[string]any{"email": "a@b.c", "age": 41, "tags": []any{"a", "c"}, "colour": "g"}}
			})
			th.m.SetElicitor(p.elicit)
			th.applyTrusted(map[string]ServerConfig{"asking": cfg})
			th.waitState(t, "asking", StateReady)

			// Declared: elicitation in both modes; no sampling without a model.
			caps := resultText(t, th.call(t, "asking", "caps", `{}`))
			if !strings.Contains(caps, `"elicitation":{"form":{},"url":{}}`) || strings.Contains(caps, "sampling") {
				t.Fatalf("capabilities %s: want elicitation in both modes, no sampling without a model", caps)
			}
			t.Logf("%s", caps)

			// Accept: the fields left out get the defaults (SEP-1034).
			c := th.call(t, "asking", "ask", askArgs(formSchema))
			var answer struct {
				Action  string         `json:"action"`
				Content map[string]any `json:"content"`
			}
			if err := json.Unmarshal([]byte(resultText(t, c)), &answer); err != nil || answer.Action != "accept" {
				t.Fatalf("result %s: %v", c.ResultJSON, err)
			}
			want := map[string]any{"name": "John Doe", "age": 41.0, "score": 95.5, "status": "active", "verified": true,
				"colour": "g", "tags": []any{"a", "c"}, "email": "a@b.c"}
			for k, v := range want {
				if gv, _ := json.Marshal(answer.Content[k]); string(gv) != jsonText(v) {
					t.Errorf("content %s = %s, want %s", k, gv, jsonText(v))
				}
			}
			// The question named the server and its call.
			q := <-p.asked
			if q.Server != "asking" || q.Call == nil || q.Call.ID != c.ID || q.Mode != tools.ElicitForm || q.Message != "Who are you?" {
				t.Fatalf("question %+v (call %+v), want server asking and call %s", q, q.Call, c.ID)
			}
		})
	}
}

// resultText is the text of a completed call's first content item.
func resultText(t *testing.T, c tools.Call) string {
	t.Helper()
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if c.Status != tools.StatusCompleted || json.Unmarshal(c.ResultJSON, &res) != nil || len(res.Content) == 0 {
		t.Fatalf("%s/%s: status %s, error %+v, result %s", c.ServerName, c.ToolName, c.Status, c.Error, c.ResultJSON)
	}
	return res.Content[0].Text
}

// wantText checks that a call completed with a text that contains want.
func wantText(t *testing.T, c tools.Call, want string) {
	t.Helper()
	if got := resultText(t, c); !strings.Contains(got, want) {
		t.Fatalf("%s/%s: text %s, want it to contain %s", c.ServerName, c.ToolName, got, want)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestElicitationAnswers(t *testing.T) {
	th := newTestHub(t, Options{Elicitation: true})
	cfg, a := askingHTTP(t)
	th.applyTrusted(map[string]ServerConfig{"asking": cfg})
	th.waitState(t, "asking", StateReady)
	outcome := func() mcptest.Outcome {
		t.Helper()
		select {
		case o := <-a.Seen:
			return o
		case <-time.After(30 * time.Second):
			t.Fatal("the server saw no outcome")
		}
		return mcptest.Outcome{}
	}

	// No one to ask: declined at once.
	th.m.SetElicitor(nil)
	wantText(t, th.call(t, "asking", "ask", askArgs(formSchema)), `"action":"decline"`)
	outcome()

	for _, action := range []string{tools.ElicitDecline, tools.ElicitCancel} {
		th.m.SetElicitor(newPerson(func(*tools.Elicitation) tools.ElicitResult { return tools.ElicitResult{Action: action} }).elicit)
		wantText(t, th.call(t, "asking", "ask", askArgs(formSchema)), `"action":"`+action+`"`)
		if o := outcome(); o.JSON != `{"action":"`+action+`"}` {
			t.Fatalf("%s: the server saw %+v", action, o)
		}
	}

	// Content that does not match the schema is refused: the server gets
	// -32602, never the content.
	for _, bad := range []map[string]any{
		{"age": 3},                             // the required email is missing
		{"email": "a@b.c", "age": -1},          // under the minimum
		{"email": "a@b.c", "status": "gone"},   // not in the enum
		{"email": "a@b.c", "tags": []any{"z"}}, // not in the items' enum
	} {
		th.m.SetElicitor(newPerson(func(*tools.Elicitation) tools.ElicitResult {
			return tools.ElicitResult{Action: tools.ElicitAccept, Content: bad}
		}).elicit)
		c := th.call(t, "asking", "ask", askArgs(formSchema))
		wantError(t, c, tools.CodeExecutionFailed, "does not match the requested schema")
		if o := outcome(); o.Err == "" || strings.Contains(o.Err, "a@b.c") {
			t.Fatalf("content %v: the server saw %+v", bad, o)
		}
	}

	// URL mode: the person is shown the URL; accept carries no content.
	p := newPerson(func(*tools.Elicitation) tools.ElicitResult { return tools.ElicitResult{Action: tools.ElicitAccept} })
	th.m.SetElicitor(p.elicit)
	wantText(t, th.call(t, "asking", "ask_url", `{"message":"Sign in","url":"https://example.com/auth"}`), `"action":"accept"`)
	outcome()
	if q := <-p.asked; q.Mode != tools.ElicitURL || q.URL != "https://example.com/auth" || q.ElicitationID != "e-1" || len(q.Schema) != 0 {
		t.Fatalf("URL question %+v", q)
	}
}

func TestElicitationRouting(t *testing.T) {
	th := newTestHub(t, Options{Elicitation: true})
	cfg, _ := askingHTTP(t)
	th.applyTrusted(map[string]ServerConfig{"asking": cfg})
	th.waitState(t, "asking", StateReady)
	editor := newPerson(func(*tools.Elicitation) tools.ElicitResult { return tools.ElicitResult{Action: tools.ElicitDecline} })
	th.m.SetElicitor(editor.elicit)

	// The call's own elicitor (a terminal) answers, not the editor.
	own := newPerson(func(*tools.Elicitation) tools.ElicitResult {
		return tools.ElicitResult{Action: tools.ElicitAccept, Content: map[string]any{"email": "x@y.z"}}
	})
	c := th.m.Execute(t.Context(), tools.ExecuteRequest{ServerName: "asking", ToolName: "ask", Arguments: json.RawMessage(askArgs(formSchema)), Elicit: own.elicit})
	wantText(t, c, `x@y.z`)
	if len(editor.asked) != 0 {
		t.Fatal("the editor was asked about a call that brought its own elicitor")
	}

	// The time the person takes does not count against the call.
	slow := newPerson(func(*tools.Elicitation) tools.ElicitResult {
		time.Sleep(1500 * time.Millisecond)
		return tools.ElicitResult{Action: tools.ElicitDecline}
	})
	th2 := newTestHub(t, Options{Elicitation: true, CallTimeout: time.Second})
	cfg2, _ := askingHTTP(t)
	th2.applyTrusted(map[string]ServerConfig{"asking": cfg2})
	th2.waitState(t, "asking", StateReady)
	th2.m.SetElicitor(slow.elicit)
	wantText(t, th2.call(t, "asking", "ask", askArgs(formSchema)), `"action":"decline"`)
}

func TestElicitationWithdrawn(t *testing.T) {
	th := newTestHub(t, Options{Elicitation: true})
	cfg, a := askingHTTP(t)
	th.applyTrusted(map[string]ServerConfig{"asking": cfg})
	th.waitState(t, "asking", StateReady)
	p := newPerson(nil) // never answers
	th.m.SetElicitor(p.elicit)

	// The call is cancelled while the person is asked: the question is
	// withdrawn, and the call ends cancelled.
	done := make(chan tools.Call, 1)
	go func() { done <- th.call(t, "asking", "ask", askArgs(formSchema)) }()
	q := <-p.asked
	if !th.m.Cancel(q.Call.ID) {
		t.Fatal("the call was not running")
	}
	select {
	case id := <-p.withdrawn:
		if id != q.ID {
			t.Fatalf("withdrawn %s, want %s", id, q.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the question was not withdrawn when its call was cancelled")
	}
	wantError(t, <-done, tools.CodeCancelled, "cancelled")
	<-a.Seen

	// The server cancels its question (over HTTP the hub speaks 2025-11-25:
	// the question is a request of its own, which the server cancels): it
	// is withdrawn from the person.
	go func() { done <- th.call(t, "asking", "ask_briefly", `{"message":"Quick?"}`) }()
	q = <-p.asked
	select {
	case id := <-p.withdrawn:
		if id != q.ID {
			t.Fatalf("withdrawn %s, want %s", id, q.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the question was not withdrawn when the server cancelled it")
	}
	if o := <-a.Seen; !strings.Contains(o.Err, "deadline") {
		t.Fatalf("the server saw %+v", o)
	}
	<-done

	// No answer in time: withdrawn, and the server gets cancel.
	th2 := newTestHub(t, Options{Elicitation: true, ElicitTimeout: 300 * time.Millisecond})
	cfg2, _ := askingHTTP(t)
	th2.applyTrusted(map[string]ServerConfig{"asking": cfg2})
	th2.waitState(t, "asking", StateReady)
	th2.m.SetElicitor(newPerson(nil).elicit)
	wantText(t, th2.call(t, "asking", "ask", askArgs(formSchema)), `"action":"cancel"`)
}

// fakeModel is a provider that answers with the request's last message
// reversed, and records the requests.
type fakeModel struct {
	profile llm.Profile
	mu      sync.Mutex
	reqs    []*llm.Request
}

func (f *fakeModel) Profile() llm.Profile { return f.profile }

func (f *fakeModel) Stream(_ context.Context, req *llm.Request, _ func(llm.Event)) (*llm.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	last := req.Messages[len(req.Messages)-1].Text
	r := []rune(last)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return &llm.Response{Text: string(r), Stop: llm.StopEndTurn, Model: f.profile.Model + "-served"}, nil
}

func TestSampling(t *testing.T) {
	models := map[string]*fakeModel{}
	sampling := &Sampling{
		Profile: "local", MaxTokens: 20, Limits: llm.Limits{Answer: 4096, ToolCall: 2048},
		Profiles: map[string]llm.Profile{
			"local":  {Name: "local", Provider: "openai-compatible", Model: "tiny", BaseURL: "http://127.0.0.1:1/v1"},
			"claude": {Name: "claude", Provider: "anthropic", Model: "claude-sonnet-4-5"},
		},
		NewProvider: func(p llm.Profile) (llm.Provider, error) {
			if models[p.Name] == nil {
				models[p.Name] = &fakeModel{profile: p}
			}
			return models[p.Name], nil
		},
	}
	var gateMu sync.Mutex
	var asked []tools.GateRequest
	answer := "allow"
	th := newTestHub(t, Options{Sampling: sampling})
	// The hub's calls go through a gate that decides as the policy does
	// for a sampling request: it asks.
	gated, err := tools.NewManager(tools.Options{Bus: th.bus, Gate: func(_ context.Context, gr *tools.GateRequest, set func(tools.ICERC)) error {
		gateMu.Lock()
		defer gateMu.Unlock()
		if gr.Tool.Name == policy.SamplingTool {
			asked = append(asked, *gr)
			set(policy.BuildICERC(policy.Request{Tool: gr.Tool, Args: gr.Args, Agent: gr.Agent}, gr.Intent, gr.ExpectedOutcome))
			if answer != "allow" {
				return tools.Errorf(tools.CodePermissionDenied, "rejected by the person (reject_once)")
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gated.Close() })
	th.Close()
	th.Hub = New(Options{Workspace: th.ws, Tools: gated, Bus: th.bus, Sampling: sampling})
	th.m = gated
	t.Cleanup(th.Close)
	cfg, _ := askingHTTP(t)
	th.applyTrusted(map[string]ServerConfig{"asking": cfg})
	th.waitState(t, "asking", StateReady)

	wantText(t, th.call(t, "asking", "caps", `{}`), `"sampling":{}`)

	// Approved: the configured profile answers, within maxTokens.
	c := th.call(t, "asking", "sample", `{"prompt":"hello","system":"be brief","maxTokens":100}`)
	wantText(t, c, `olleh`)
	wantText(t, c, `"model":"tiny-served"`)
	wantText(t, c, `"stopReason":"endTurn"`)
	req := models["local"].reqs[0]
	// The answer is bounded as an agent's is (agent.maxAnswerSize and
	// agent.maxToolCallSize).
	if req.System != "be brief" || req.MaxOutputTokens != 20 || req.Messages[0].Role != llm.RoleUser || req.Limits != sampling.Limits {
		t.Fatalf("model request %+v", req)
	}
	// The sampling was a tool call of asking/mcp_sampling, by mcp:asking,
	// within the call: visible, audited, and its ICERC record names the
	// model and shows the messages.
	var sc tools.Call
	for _, cl := range gated.Calls(tools.CallFilter{}) {
		if cl.ToolName == policy.SamplingTool {
			sc = cl
		}
	}
	if sc.ServerName != "asking" || sc.Author != "mcp:asking" || sc.RequestID != c.ID || sc.Status != tools.StatusCompleted ||
		sc.ICERC == nil || !strings.Contains(sc.ICERC.Command, "ask model tiny (profile local") || !strings.Contains(sc.ICERC.Command, "user: hello") ||
		!strings.Contains(string(sc.ResultJSON), "olleh") {
		t.Fatalf("sampling call %+v icerc %+v", sc, sc.ICERC)
	}
	if !asked[0].Agent {
		t.Fatal("a sampling request was decided as the person's own act")
	}

	// A hint picks the profile whose name or model contains it.
	wantText(t, th.call(t, "asking", "sample", `{"prompt":"hi","hint":"sonnet"}`), `"model":"claude-sonnet-4-5-served"`)

	// Rejected: the server gets -1, "User rejected sampling request".
	gateMu.Lock()
	answer = "reject"
	gateMu.Unlock()
	c = th.call(t, "asking", "sample", `{"prompt":"no"}`)
	wantError(t, c, tools.CodeExecutionFailed, "User rejected sampling request")
}

func TestSamplingProfilePick(t *testing.T) {
	s := &Sampling{Profile: "main", Profiles: map[string]llm.Profile{
		"main":  {Name: "main", Model: "gpt-5", Prices: llm.Prices{Output: 10}},
		"cheap": {Name: "cheap", Model: "gpt-5-mini", Prices: llm.Prices{Output: 2}},
		"smart": {Name: "smart", Model: "claude-opus-4", Prices: llm.Prices{Output: 75}},
		"local": {Name: "local", Model: "qwen3:8b"},
	}}
	for _, c := range []struct {
		prefs *mcpModelPrefs
		want  string
	}{
		{nil, "main"},
		{&mcpModelPrefs{hints: []string{"opus"}}, "smart"},
		{&mcpModelPrefs{hints: []string{"nothing", "QWEN"}}, "local"},
		{&mcpModelPrefs{hints: []string{"gpt-5"}}, "main"}, // the configured one first
		{&mcpModelPrefs{cost: 0.9}, "cheap"},
		{&mcpModelPrefs{speed: 0.8, intelligence: 0.2}, "cheap"},
		{&mcpModelPrefs{intelligence: 0.9}, "smart"},
		{&mcpModelPrefs{intelligence: 0.4}, "main"},
		{&mcpModelPrefs{hints: []string{"unknown"}}, "main"},
	} {
		p, why := s.pick(c.prefs.sdk())
		if p.Name != c.want {
			t.Errorf("%+v: picked %s (%s), want %s", c.prefs, p.Name, why, c.want)
		}
	}
}

//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28 (SEP-2577); servers use it until then

// mcpModelPrefs are model preferences, written short.
type mcpModelPrefs struct {
	hints                     []string
	cost, speed, intelligence float64
}

func (p *mcpModelPrefs) sdk() *mcp.ModelPreferences {
	if p == nil {
		return nil
	}
	m := &mcp.ModelPreferences{CostPriority: p.cost, SpeedPriority: p.speed, IntelligencePriority: p.intelligence}
	for _, h := range p.hints {
		m.Hints = append(m.Hints, &mcp.ModelHint{Name: h})
	}
	return m
}

// Two calls in flight at once: the hub speaks 2025-11-25 (the draft
// 2026-07-28 would send its server/discover probe, which 2025 servers
// refuse), where a question arrives on its own, outside its call, so two
// questions cannot be told apart: they name no call, over either transport.
func TestElicitationTwoCallsInFlight(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			th := newTestHub(t, Options{Elicitation: true})
			cfg, _ := askingHTTP(t)
			if transport == "stdio" {
				cfg = askingStdio(t)
			}
			th.applyTrusted(map[string]ServerConfig{"asking": cfg})
			th.waitState(t, "asking", StateReady)
			release := make(chan struct{})
			p := newPerson(func(*tools.Elicitation) tools.ElicitResult {
				<-release
				return tools.ElicitResult{Action: tools.ElicitDecline}
			})
			th.m.SetElicitor(p.elicit)
			calls := make(chan tools.Call, 2)
			for range 2 {
				go func() { calls <- th.call(t, "asking", "ask", askArgs(formSchema)) }()
			}
			q1, q2 := <-p.asked, <-p.asked
			close(release)
			c1, c2 := <-calls, <-calls
			if c1.ID == "" || c2.ID == "" || c1.ID == c2.ID {
				t.Fatalf("calls %q and %q", c1.ID, c2.ID)
			}
			// A question names a call only while that call is the one in
			// flight (the other not started yet); never the wrong one, and
			// never both the same.
			var named []string
			for _, q := range []*tools.Elicitation{q1, q2} {
				if q.Call != nil {
					if q.Call.ID != c1.ID && q.Call.ID != c2.ID {
						t.Fatalf("a question names %s, neither call", q.Call.ID)
					}
					named = append(named, q.Call.ID)
				}
			}
			if len(named) == 2 {
				t.Fatalf("both questions name a call (%v): with two in flight, one cannot be told", named)
			}
		})
	}
}

// TestFieldOrder: the form's fields keep the order the server wrote them
// in, over both transports (the SDK alone decodes them into a map).
func TestFieldOrder(t *testing.T) {
	order := `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"},"mid":{"type":"integer"},"beta":{"type":"boolean"}}}`
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			th := newTestHub(t, Options{Elicitation: true})
			cfg, _ := askingHTTP(t)
			if transport == "stdio" {
				cfg = askingStdio(t)
			}
			p := newPerson(func(*tools.Elicitation) tools.ElicitResult { return tools.ElicitResult{Action: tools.ElicitDecline} })
			th.m.SetElicitor(p.elicit)
			th.applyTrusted(map[string]ServerConfig{"asking": cfg})
			th.waitState(t, "asking", StateReady)
			wantText(t, th.call(t, "asking", "ask", askArgs(order)), "decline")
			q := <-p.asked
			if want := `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"},"mid":{"type":"integer"},"beta":{"type":"boolean"}}}`; string(q.Schema) != want {
				t.Fatalf("schema %s\nwant %s", q.Schema, want)
			}
		})
	}
}

func TestWithFieldOrder(t *testing.T) {
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"b":{},"a":{}}}}}` + "\n":                              `"_meta":{"nexus/fieldOrder":["b","a"]}`,
		`data: {"jsonrpc":"2.0","id":1,"result":{"inputRequests":{"q":{"method":"elicitation/create","params":{"_meta":{"x":1},"requestedSchema":{"properties":{"y":{},"x":{}}}}}}}}` + "\r\n": `"_meta":{"nexus/fieldOrder":["y","x"],"x":1}`,
		`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}` + "\n": ``,
		`data: not json "requestedSchema"` + "\n":                 ``,
	} {
		got := string(withFieldOrder([]byte(in)))
		if want == "" {
			if got != in {
				t.Errorf("%q changed to %q", in, got)
			}
			continue
		}
		if !strings.Contains(got, want) || !strings.HasSuffix(got, in[len(strings.TrimRight(in, "\r\n")):]) ||
			strings.HasPrefix(in, "data:") != strings.HasPrefix(got, "data: ") {
			t.Errorf("%q became %q, want it to hold %s", in, got, want)
		}
	}
}
