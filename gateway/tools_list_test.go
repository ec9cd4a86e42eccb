package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/tools"
)

// TestToolAnnotations: tools/list carries each tool's MCP hints as its
// definition says them (the core tools', an MCP server's); a tool without
// any gets the ones its kind implies, as before.
func TestToolAnnotations(t *testing.T) {
	g, m, _ := pingGateway(t)
	register(t, m, []tools.Definition{
		{Name: "run", Kind: tools.KindExecute, Risk: tools.RiskHigh, Annotations: &tools.Annotations{Destructive: true, OpenWorld: true}},
		{Name: "write", Kind: tools.KindEdit, Risk: tools.RiskMedium, Annotations: &tools.Annotations{Destructive: true, Idempotent: true}},
		{Name: "look", Kind: tools.KindRead, Risk: tools.RiskLow, Annotations: &tools.Annotations{ReadOnly: true, Idempotent: true}},
		{Name: "drop", Kind: tools.KindDelete, Risk: tools.RiskHigh},
	}...)
	res, err := connect(t, g).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	want := map[string]*sdk.ToolAnnotations{
		"run":   {DestructiveHint: &yes, OpenWorldHint: &yes},
		"write": {DestructiveHint: &yes, IdempotentHint: true, OpenWorldHint: &no},
		"look":  {ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no},
		"drop":  {DestructiveHint: &yes},
		"ping":  {ReadOnlyHint: true},
	}
	seen := 0
	for _, tl := range res.Tools {
		w, ok := want[tl.Name]
		if !ok {
			continue
		}
		seen++
		got, _ := json.Marshal(tl.Annotations)
		wantJSON, _ := json.Marshal(w)
		if string(got) != string(wantJSON) {
			t.Errorf("%s: annotations %s, want %s", tl.Name, got, wantJSON)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d tools listed: %+v", seen, len(want), res.Tools)
	}
}

// TestPlainSchemas: tools/list gives a schema without a top-level oneOf
// (clients hand it to providers that refuse one), the rule in the
// description; a call that breaks the rule is still refused by the
// manager, which validates the full schema.
func TestPlainSchemas(t *testing.T) {
	g, m, _ := pingGateway(t)
	d := tools.Definition{Name: "run", Description: "Run a command.", Kind: tools.KindExecute, Risk: tools.RiskHigh,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"argv":{"type":"array","items":{"type":"string"}}},
			"oneOf":[{"required":["command"]},{"required":["argv"]}],"additionalProperties":false}`)}
	ran := register(t, m, d)
	cs := connect(t, g)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed *sdk.Tool
	for _, tl := range res.Tools {
		if tl.Name == "run" {
			listed = tl
		}
	}
	if listed == nil {
		t.Fatalf("run not listed: %+v", res.Tools)
	}
	schema, _ := json.Marshal(listed.InputSchema)
	var top map[string]any
	if err := json.Unmarshal(schema, &top); err != nil {
		t.Fatal(err)
	}
	if _, ok := top["oneOf"]; ok || top["type"] != "object" {
		t.Errorf("listed schema %s", schema)
	}
	if listed.Description != "Run a command.\n\nGive exactly one of: command; argv." {
		t.Errorf("description %q", listed.Description)
	}
	call, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "run", Arguments: map[string]any{"command": "ls", "argv": []string{"ls"}}})
	if err != nil {
		t.Fatal(err)
	}
	text := ""
	for _, c := range call.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	if !call.IsError || !strings.Contains(text, tools.CodeInvalidArguments) || atomic.LoadInt64(ran) != 0 {
		t.Errorf("a call with both command and argv: error %v, ran %d, %q", call.IsError, atomic.LoadInt64(ran), text)
	}
}

// register registers tools of defs on m whose handler only counts its
// calls, and returns the count.
func register(t *testing.T, m *tools.Manager, defs ...tools.Definition) *int64 {
	t.Helper()
	ran := new(int64)
	for _, d := range defs {
		if err := m.Register(tools.Tool{Definition: d, Handler: func(context.Context, *tools.Invocation, json.RawMessage) (json.RawMessage, error) {
			atomic.AddInt64(ran, 1)
			return json.RawMessage(`{}`), nil
		}}); err != nil {
			t.Fatal(err)
		}
	}
	return ran
}
