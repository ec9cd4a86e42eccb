package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/tools"
)

// TestPlainSchemas: tools/list gives a schema without a top-level oneOf
// (clients hand it to providers that refuse one), the rule in the
// description; a call that breaks the rule is still refused by the
// manager, which validates the full schema.
func TestPlainSchemas(t *testing.T) {
	g, m, _ := pingGateway(t)
	d := tools.Definition{Name: "run", Description: "Run a command.", Kind: tools.KindExecute, Risk: tools.RiskHigh,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"argv":{"type":"array","items":{"type":"string"}}},
			"oneOf":[{"required":["command"]},{"required":["argv"]}],"additionalProperties":false}`)}
	ran := 0
	if err := m.Register(tools.Tool{Definition: d, Handler: func(context.Context, *tools.Invocation, json.RawMessage) (json.RawMessage, error) {
		ran++
		return json.RawMessage(`{}`), nil
	}}); err != nil {
		t.Fatal(err)
	}
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
	if !call.IsError || !strings.Contains(text, tools.CodeInvalidArguments) || ran != 0 {
		t.Errorf("a call with both command and argv: error %v, ran %d, %q", call.IsError, ran, text)
	}
}
