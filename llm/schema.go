package llm

import "github.com/nexuscocreate/nexus/internal/toolschema"

// providerTool is t as every provider accepts it: see [toolschema.Plain].
// Anthropic answers 400 "input_schema does not support oneOf, allOf, or
// anyOf at the top level"; OpenAI's function calling wants a plain object
// at the root (strict mode refuses a root anyOf); Gemini's function
// declarations are an OpenAPI subset without them.
func providerTool(t Tool) Tool {
	t.Schema, t.Description = toolschema.Plain(t.Schema, t.Description)
	return t
}
