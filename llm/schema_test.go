package llm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/llm"
)

// combinedTools are tools whose schemas have top-level combinators, as
// execute_command (oneOf) and search_files (anyOf) do, and one nested
// anyOf that every provider takes and that stays.
func combinedTools() []llm.Tool {
	return []llm.Tool{
		{Name: "execute_command", Description: "Run a command.", Schema: json.RawMessage(`{
			"type": "object",
			"properties": {"command": {"type": "string"}, "argv": {"type": "array", "items": {"type": "string"}}},
			"oneOf": [{"required": ["command"]}, {"required": ["argv"]}],
			"additionalProperties": false}`)},
		{Name: "search_files", Description: "Search.", Schema: json.RawMessage(`{
			"type": "object",
			"properties": {"pattern": {"type": "string"}, "glob": {"type": "string"},
				"limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
			"anyOf": [{"required": ["pattern"]}, {"required": ["glob", "limit"]}],
			"allOf": [{"not": {"required": ["limit"]}}],
			"additionalProperties": false}`)},
		{Name: "plain", Description: "No combinators.", Schema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}`)},
	}
}

// wantDescriptions are the combinedTools' descriptions as sent: the
// alternatives in words after the tool's own text.
var wantDescriptions = map[string]string{
	"execute_command": "Run a command.\n\nGive exactly one of: command; argv.",
	"search_files":    `Search.` + "\n\n" + `Give at least one of: pattern; glob and limit. The arguments must match all of: {"not":{"required":["limit"]}}.`,
	"plain":           "No combinators.",
}

// checkSentTool checks one tool as an adapter sent it: its schema an object
// schema ("type": "object") without a top-level oneOf, anyOf, allOf or not
// (what Anthropic's input_schema, OpenAI's function parameters and
// Gemini's function declarations accept), nested combinators kept, and the
// rules in its description.
func checkSentTool(t *testing.T, name, description string, schema any) {
	t.Helper()
	s, ok := schema.(map[string]any)
	if !ok {
		t.Fatalf("%s: schema %v is not an object", name, schema)
	}
	if s["type"] != "object" {
		t.Errorf("%s: schema type %v, want object", name, s["type"])
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf", "not"} {
		if _, ok := s[k]; ok {
			t.Errorf("%s: top-level %s sent: %v", name, k, s)
		}
	}
	if s["additionalProperties"] != false {
		t.Errorf("%s: additionalProperties %v, want false kept", name, s["additionalProperties"])
	}
	if name == "search_files" {
		limit, _ := s["properties"].(map[string]any)["limit"].(map[string]any)
		if _, ok := limit["anyOf"]; !ok {
			t.Errorf("nested anyOf of limit dropped: %v", limit)
		}
	}
	if w := wantDescriptions[name]; description != w {
		t.Errorf("%s: description %q, want %q", name, description, w)
	}
}

func TestAnthropicToolSchemas(t *testing.T) {
	r := newReplay(t, answer{file: "anthropic/llama-max-tokens.sse"})
	p := anthropicOn(t, r, nil, llm.Profile{})
	req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "Hi."}}, Tools: combinedTools()}
	if _, _, err := collect(t, p, req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			InputSchema any    `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.requests()[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Tools) != 3 {
		t.Fatalf("%d tools sent, want 3", len(body.Tools))
	}
	for _, tool := range body.Tools {
		checkSentTool(t, tool.Name, tool.Description, tool.InputSchema)
	}
}

func TestGeminiToolSchemas(t *testing.T) {
	r := newReplay(t, answer{file: "gemini/stream-max-tokens.sse"})
	p := geminiOn(t, r, nil, llm.Profile{})
	req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "Hi."}}, Tools: combinedTools()}
	if _, _, err := collect(t, p, req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Tools []struct {
			FunctionDeclarations []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				Schema      any    `json:"parametersJsonSchema"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.requests()[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Tools) != 1 || len(body.Tools[0].FunctionDeclarations) != 3 {
		t.Fatalf("tools sent: %+v", body.Tools)
	}
	for _, d := range body.Tools[0].FunctionDeclarations {
		checkSentTool(t, d.Name, d.Description, d.Schema)
	}
}

func TestOpenAIToolSchemas(t *testing.T) {
	for _, c := range apis {
		for _, provider := range []string{llm.ProviderOpenAI, llm.ProviderOpenAICompatible} {
			t.Run(provider+"/"+c.api, func(t *testing.T) {
				body := recording(t, c.tools)
				f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeSSE(w, body) })
				p := llm.Profile{Name: "test", Provider: provider, API: c.api}
				req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "Hi."}}, Tools: combinedTools()}
				if _, err := f.provider(t, p, nil).Stream(context.Background(), req, func(llm.Event) {}); err != nil {
					t.Fatal(err)
				}
				sent, _ := f.request(0).body["tools"].([]any)
				if len(sent) != 3 {
					t.Fatalf("tools sent: %v", f.request(0).body["tools"])
				}
				for _, x := range sent {
					tool, _ := x.(map[string]any)
					if c.api == llm.APIChat {
						tool, _ = tool["function"].(map[string]any)
					}
					name, _ := tool["name"].(string)
					desc, _ := tool["description"].(string)
					checkSentTool(t, name, desc, tool["parameters"])
				}
			})
		}
	}
}

// TestToolSchemaNotAnObject: a schema the adapters cannot read is sent as
// before (an empty object schema for Anthropic), not dropped or changed.
func TestToolSchemaNotAnObject(t *testing.T) {
	r := newReplay(t, answer{file: "anthropic/llama-max-tokens.sse"})
	p := anthropicOn(t, r, nil, llm.Profile{})
	req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "Hi."}},
		Tools: []llm.Tool{{Name: "odd", Description: "Odd.", Schema: json.RawMessage(`[1,2]`)}}}
	if _, _, err := collect(t, p, req); err != nil {
		t.Fatal(err)
	}
	if b := string(r.requests()[0].body); !strings.Contains(b, `"input_schema":{"type":"object"}`) || !strings.Contains(b, `"description":"Odd."`) {
		t.Errorf("body %s", b)
	}
}
