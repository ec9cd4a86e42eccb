package policy

import (
	"encoding/json"
	"fmt"

	"github.com/nexuscocreate/nexus/tools"
)

// Reads of an MCP server's resources and prompts are the caller's reads of
// what the server holds: the McpHub makes each resources/read a call of
// SERVER/mcp_resource and each prompts/get a call of SERVER/mcp_prompt, by
// the party that reads, so that they are decided here like the server's
// tools, audited and shown like any call. Their risk is low (a read:
// allowed unless the app's lists or tools.policy say otherwise);
// "SERVER/*", "*/*" and "*" cover them, "SERVER/mcp_resource" and
// "SERVER/mcp_prompt" name them alone. No one can call them by name.
const (
	ResourceTool = "mcp_resource"
	PromptTool   = "mcp_prompt"
)

// ResourceArgs are the arguments of a call of ResourceTool.
type ResourceArgs struct {
	URI string `json:"uri"`
}

// PromptArgs are the arguments of a call of PromptTool: the server's name
// of the prompt and the values of its arguments.
type PromptArgs struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
}

// ResourceSchema and PromptSchema are the input schemas of ResourceTool
// and PromptTool.
var (
	ResourceSchema = json.RawMessage(`{"type":"object","properties":{"uri":{"type":"string","minLength":1}},"required":["uri"],"additionalProperties":false}`)
	PromptSchema   = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1},` +
		`"arguments":{"type":"object","additionalProperties":{"type":"string"}}},"required":["name"],"additionalProperties":false}`)
)

// ReadDefinition is the tool of a read of server: ResourceTool or
// PromptTool (any other name is taken as PromptTool). Its description is
// the same for every read of the server, so that a remembered answer
// covers them all.
func ReadDefinition(server, tool string) tools.Definition {
	d := tools.Definition{Name: tool, ServerName: server, Kind: tools.KindRead, Risk: tools.RiskLow}
	switch tool {
	case ResourceTool:
		d.Title = "Resource of " + server
		d.Description = fmt.Sprintf("reads a resource of MCP server %q (resources/read)", server)
		d.InputSchema = ResourceSchema
	default:
		d.Title = "Prompt of " + server
		d.Description = fmt.Sprintf("gets a prompt of MCP server %q (prompts/get)", server)
		d.InputSchema = PromptSchema
	}
	return d
}
