package gateway

import (
	"context"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/tools"
)

// TestToolAnnotations: tools/list carries each tool's MCP hints as its
// definition says them (the core tools', an MCP server's); a tool without
// any gets the ones its kind implies, as before.
func TestToolAnnotations(t *testing.T) {
	g, m, _ := pingGateway(t)
	nop := func(context.Context, *tools.Invocation, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{}`), nil
	}
	for _, d := range []tools.Definition{
		{Name: "run", Kind: tools.KindExecute, Risk: tools.RiskHigh, Annotations: &tools.Annotations{Destructive: true, OpenWorld: true}},
		{Name: "write", Kind: tools.KindEdit, Risk: tools.RiskMedium, Annotations: &tools.Annotations{Destructive: true, Idempotent: true}},
		{Name: "look", Kind: tools.KindRead, Risk: tools.RiskLow, Annotations: &tools.Annotations{ReadOnly: true, Idempotent: true}},
		{Name: "drop", Kind: tools.KindDelete, Risk: tools.RiskHigh},
	} {
		if err := m.Register(tools.Tool{Definition: d, Handler: nop}); err != nil {
			t.Fatal(err)
		}
	}
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
