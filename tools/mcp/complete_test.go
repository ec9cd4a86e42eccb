package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28 (SEP-2577); servers use it until then

// TestSamplingByClient: with Sampling.Client and no profile, the hub
// declares sampling; a request during a call that carries a Sampler is
// answered by it (still a call of asking/mcp_sampling, whose result says
// who answered), its error reaches the server with its code, and a call
// without one gets "no model for sampling".
func TestSamplingByClient(t *testing.T) {
	th := newTestHub(t, Options{Sampling: &Sampling{Client: true, MaxTokens: 20}})
	cfg, _ := askingHTTP(t)
	th.applyTrusted(map[string]ServerConfig{"asking": cfg})
	th.waitState(t, "asking", StateReady)
	wantText(t, th.call(t, "asking", "caps", `{}`), `"sampling":{}`)

	var got *mcp.CreateMessageParams
	sampler := func(_ context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		got = p
		return &mcp.CreateMessageResult{Model: "client-model", Role: "assistant", Content: &mcp.TextContent{Text: "from the client"}}, nil
	}
	call := func(fn Sampler, args string) tools.Call {
		return th.m.Execute(WithSampler(t.Context(), fn), tools.ExecuteRequest{ServerName: "asking", ToolName: "sample", Arguments: json.RawMessage(args)})
	}
	c := call(sampler, `{"prompt":"hello","maxTokens":100}`)
	wantText(t, c, `from the client`)
	if got == nil || got.MaxTokens != 20 {
		t.Fatalf("the client got %+v; want maxTokens capped to 20", got)
	}
	var sc tools.Call
	for _, cl := range th.m.Calls(tools.CallFilter{}) {
		if cl.ToolName == policy.SamplingTool {
			sc = cl
		}
	}
	if sc.RequestID != c.ID || !strings.Contains(string(sc.ResultJSON), `"answeredBy":"client"`) {
		t.Fatalf("the sampling call %+v", sc)
	}

	c = call(func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		return nil, &jsonrpc.Error{Code: samplingRejected, Message: "User rejected sampling request"}
	}, `{"prompt":"no"}`)
	wantError(t, c, tools.CodeExecutionFailed, "User rejected sampling request")

	wantError(t, th.call(t, "asking", "sample", `{"prompt":"anyone?"}`), tools.CodeExecutionFailed, "no model for sampling")
}

// TestTitledMultiSelect: a titled multi-select whose items carry "type":
// "string" beside anyOf (valid JSON Schema, refused by the go-sdk's check)
// goes on in the spec's shape, {anyOf} alone; an untitled one keeps its
// type.
func TestTitledMultiSelect(t *testing.T) {
	var schema map[string]any
	json.Unmarshal([]byte(`{"type":"object","properties":{`+
		`"titled":{"type":"array","items":{"type":"string","anyOf":[{"const":"r","title":"Red"}]}},`+
		`"untitled":{"type":"array","items":{"type":"string","enum":["a"]}}}}`), &schema)
	var seen any
	next := func(_ context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		seen = req.(*mcp.ElicitRequest).Params.RequestedSchema
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	req := &mcp.ElicitRequest{Params: &mcp.ElicitParams{Mode: "form", Message: "?", RequestedSchema: schema}}
	if _, err := specElicitation(next)(t.Context(), "elicitation/create", req); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(seen)
	want := `{"properties":{"titled":{"items":{"anyOf":[{"const":"r","title":"Red"}]},"type":"array"},` +
		`"untitled":{"items":{"enum":["a"],"type":"string"},"type":"array"}},"type":"object"}`
	if string(got) != want {
		t.Fatalf("the schema went on as\n%s\nwant\n%s", got, want)
	}
}

// TestComplete: a server without completions completes nothing; the hub
// needs a server's name.
func TestComplete(t *testing.T) {
	th := newTestHub(t, Options{})
	cfg, _ := askingHTTP(t)
	th.applyTrusted(map[string]ServerConfig{"asking": cfg})
	th.waitState(t, "asking", StateReady)
	params := &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "p"}, Argument: mcp.CompleteParamsArgument{Name: "a"}}
	res, err := th.Complete(t.Context(), "asking", params)
	if err != nil || res.Completion.Values == nil || len(res.Completion.Values) != 0 {
		t.Fatalf("asking has no completions: %+v %v", res, err)
	}
	if _, err := th.Complete(t.Context(), "", params); err == nil {
		t.Fatal("Complete without a server name")
	}
	if _, err := th.Complete(t.Context(), "nope", params); err == nil {
		t.Fatal("Complete of an unknown server")
	}
}
