package mcp

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/tools"
)

// Annotations from a server inform the kind, and never lower the risk.
func TestDefinitionFromAnnotations(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		ann  *mcp.ToolAnnotations
		kind tools.Kind
		risk tools.Risk
	}{
		{nil, tools.KindOther, tools.RiskMedium},
		{&mcp.ToolAnnotations{ReadOnlyHint: true}, tools.KindRead, tools.RiskMedium},
		{&mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &no}, tools.KindRead, tools.RiskMedium},
		{&mcp.ToolAnnotations{DestructiveHint: &yes}, tools.KindDelete, tools.RiskHigh},
		{&mcp.ToolAnnotations{DestructiveHint: &no}, tools.KindEdit, tools.RiskMedium},
		{&mcp.ToolAnnotations{Title: "Nice"}, tools.KindEdit, tools.RiskMedium},
	} {
		d, err := definition("srv", &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}, Annotations: c.ann})
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind != c.kind || d.Risk != c.risk || d.ServerName != "srv" {
			t.Errorf("%+v: kind %s risk %s, want %s %s", c.ann, d.Kind, d.Risk, c.kind, c.risk)
		}
	}
	d, _ := definition("srv", &mcp.Tool{Name: "t", Annotations: &mcp.ToolAnnotations{Title: "From annotations"}})
	if d.Title != "From annotations" || string(d.InputSchema) != `{"type":"object"}` {
		t.Errorf("title %q, schema %s", d.Title, d.InputSchema)
	}
}
