package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestGatewayToolSchemas: the real daemon's gateway lists every core tool
// with a schema providers accept (no top-level oneOf, anyOf, allOf or
// not; execute_command's and search_files' alternatives in words) and
// with its MCP annotations; execute_command with both command and argv is
// still refused, by the manager's validation of the full schema.
func TestGatewayToolSchemas(t *testing.T) {
	ws := newWorkspace(t, gatewayConfig)
	d := startDaemon(t, ws)
	c := connectMCP(t, httpMCP(d.mcpURL(), d.admin))
	res, err := c.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]string{
		"execute_command": "Give exactly one of: command; argv.",
		"search_files":    "Give at least one of: pattern; glob.",
	}
	hints := map[string]string{
		"read_file":       `{"destructiveHint":false,"idempotentHint":true,"openWorldHint":false,"readOnlyHint":true}`,
		"write_file":      `{"destructiveHint":true,"idempotentHint":true,"openWorldHint":false,"readOnlyHint":false}`,
		"execute_command": `{"destructiveHint":true,"idempotentHint":false,"openWorldHint":true,"readOnlyHint":false}`,
		"web_fetch":       `{"destructiveHint":false,"idempotentHint":false,"openWorldHint":true,"readOnlyHint":true}`,
	}
	for _, tl := range res.Tools {
		if strings.Contains(tl.Name, "__") {
			continue // an MCP server's
		}
		schema, _ := json.Marshal(tl.InputSchema)
		var top map[string]any
		if err := json.Unmarshal(schema, &top); err != nil || top["type"] != "object" {
			t.Errorf("%s: schema %s", tl.Name, schema)
		}
		for _, k := range []string{"oneOf", "anyOf", "allOf", "not"} {
			if _, ok := top[k]; ok {
				t.Errorf("%s: top-level %s in %s", tl.Name, k, schema)
			}
		}
		if tl.Annotations == nil {
			t.Errorf("%s: no annotations", tl.Name)
			continue
		}
		if r, ok := rules[tl.Name]; ok {
			delete(rules, tl.Name)
			if !strings.HasSuffix(tl.Description, r) {
				t.Errorf("%s: description does not end with %q: %q", tl.Name, r, tl.Description)
			}
		}
		if h, ok := hints[tl.Name]; ok {
			delete(hints, tl.Name)
			var got map[string]any // title aside
			b, _ := json.Marshal(tl.Annotations)
			json.Unmarshal(b, &got)
			delete(got, "title")
			if b, _ := json.Marshal(got); string(b) != h {
				t.Errorf("%s: annotations %s, want %s", tl.Name, b, h)
			}
		}
	}
	if len(rules) > 0 || len(hints) > 0 {
		t.Errorf("not listed: %v %v", rules, hints)
	}
	text, isErr := callText(t, c.ClientSession, "execute_command", map[string]any{"command": "true", "argv": []string{"true"}})
	if !isErr || !strings.HasPrefix(text, "invalid_arguments") {
		t.Errorf("execute_command with command and argv: %q %v", text, isErr)
	}
}
