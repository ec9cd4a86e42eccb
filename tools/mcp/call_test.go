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
