package mcp

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/tools"
)

// Annotations from a server inform the kind, never lower the risk, and
// are kept with MCP's defaults (destructive and open-world unless said).
func TestDefinitionFromAnnotations(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		ann  *mcp.ToolAnnotations
		kind tools.Kind
		risk tools.Risk
		kept *tools.Annotations
	}{
		{nil, tools.KindOther, tools.RiskMedium, nil},
		{&mcp.ToolAnnotations{ReadOnlyHint: true}, tools.KindRead, tools.RiskMedium,
			&tools.Annotations{ReadOnly: true, Destructive: true, OpenWorld: true}},
		{&mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &no}, tools.KindRead, tools.RiskMedium,
			&tools.Annotations{ReadOnly: true, Idempotent: true}},
		{&mcp.ToolAnnotations{DestructiveHint: &yes}, tools.KindDelete, tools.RiskHigh,
			&tools.Annotations{Destructive: true, OpenWorld: true}},
		{&mcp.ToolAnnotations{DestructiveHint: &no, OpenWorldHint: &no}, tools.KindEdit, tools.RiskMedium,
			&tools.Annotations{}},
		{&mcp.ToolAnnotations{Title: "Nice", IdempotentHint: true}, tools.KindEdit, tools.RiskMedium,
			&tools.Annotations{Destructive: true, Idempotent: true, OpenWorld: true}},
	} {
		d, err := definition("srv", &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}, Annotations: c.ann})
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind != c.kind || d.Risk != c.risk || d.ServerName != "srv" {
			t.Errorf("%+v: kind %s risk %s, want %s %s", c.ann, d.Kind, d.Risk, c.kind, c.risk)
		}
		if (d.Annotations == nil) != (c.kept == nil) || d.Annotations != nil && *d.Annotations != *c.kept {
			t.Errorf("%+v: annotations %+v, want %+v", c.ann, d.Annotations, c.kept)
		}
	}
	d, _ := definition("srv", &mcp.Tool{Name: "t", Annotations: &mcp.ToolAnnotations{Title: "From annotations"}})
	if d.Title != "From annotations" || string(d.InputSchema) != `{"type":"object"}` {
		t.Errorf("title %q, schema %s", d.Title, d.InputSchema)
	}
}

// A tool of a server on this machine may change any file, unless it says
// it only reads; a remote server's tools cannot reach the workspace.
func TestToolTouches(t *testing.T) {
	for _, c := range []struct {
		transport string
		ann       *mcp.ToolAnnotations
		all       bool
	}{
		{"stdio", nil, true},
		{"stdio", &mcp.ToolAnnotations{Title: "edit"}, true},
		{"stdio", &mcp.ToolAnnotations{ReadOnlyHint: true}, false},
		{"http", nil, false},
		{"http", &mcp.ToolAnnotations{Title: "edit"}, false},
	} {
		d, err := definition("srv", &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}, Annotations: c.ann})
		if err != nil {
			t.Fatal(err)
		}
		var got tools.Touch
		if fn := touches(c.transport, d); fn != nil {
			got = fn(nil)
		}
		if got.All != c.all || len(got.Paths) != 0 {
			t.Errorf("%s %+v: touches %+v, want all=%v", c.transport, c.ann, got, c.all)
		}
	}
}
