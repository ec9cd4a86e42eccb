package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// combinators are the keywords providers refuse at the top of a tool's
// input schema: Anthropic answers 400 "input_schema does not support
// oneOf, allOf, or anyOf at the top level"; OpenAI's function calling wants
// a plain object at the root (and strict mode refuses a root anyOf);
// Gemini's parameters are an OpenAPI subset without them. Nested ones are
// left alone: every provider takes an anyOf under a property.
var combinators = []string{"oneOf", "anyOf", "allOf", "not"}

// providerTool is t as every provider accepts it: the top-level
// combinators of its schema are taken out and said in its description, in
// words a model can follow ("Give exactly one of: command, argv."). The
// full schema still holds where the call is validated (the ToolManager), so
// a call that breaks the rule fails there with invalid_arguments, as
// before. A schema that is not a JSON object is left for the adapter.
func providerTool(t Tool) Tool {
	if !isJSONObject(t.Schema) {
		return t
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(t.Schema, &m); err != nil {
		return t
	}
	var rules []string
	for _, k := range combinators {
		v, ok := m[k]
		if !ok {
			continue
		}
		rules = append(rules, combinatorRule(k, v))
		delete(m, k)
	}
	if len(rules) == 0 {
		return t
	}
	if _, ok := m["type"]; !ok {
		m["type"] = json.RawMessage(`"object"`)
	}
	schema, err := json.Marshal(m)
	if err != nil {
		return t
	}
	t.Schema = schema
	t.Description = strings.TrimSpace(t.Description + "\n\n" + strings.Join(rules, " "))
	return t
}

// combinatorRule says in words what keyword k with value v asks of the
// arguments. A branch that only requires fields is said as their names;
// any other branch as its compact JSON.
func combinatorRule(k string, v json.RawMessage) string {
	if k == "not" {
		return "The arguments must not match " + branchText(v) + "."
	}
	var branches []json.RawMessage
	if err := json.Unmarshal(v, &branches); err != nil || len(branches) == 0 {
		return fmt.Sprintf("The arguments must also match %s: %s.", k, compactJSON(v))
	}
	parts := make([]string, len(branches))
	for i, b := range branches {
		parts[i] = branchText(b)
	}
	switch k {
	case "oneOf":
		return "Give exactly one of: " + strings.Join(parts, "; ") + "."
	case "anyOf":
		return "Give at least one of: " + strings.Join(parts, "; ") + "."
	default: // allOf
		return "The arguments must match all of: " + strings.Join(parts, "; ") + "."
	}
}

// branchText is one alternative of a combinator in words: the fields it
// requires ("command", "path and line") when that is all it says, its
// compact JSON otherwise.
func branchText(b json.RawMessage) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err == nil && len(m) == 1 {
		var req []string
		if err := json.Unmarshal(m["required"], &req); err == nil && len(req) > 0 {
			if len(req) == 1 {
				return req[0]
			}
			return strings.Join(req[:len(req)-1], ", ") + " and " + req[len(req)-1]
		}
	}
	return compactJSON(b)
}

// compactJSON is b without insignificant space, its keys sorted.
func compactJSON(b json.RawMessage) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		var buf bytes.Buffer
		if json.Compact(&buf, b) != nil {
			return string(b)
		}
		return buf.String()
	}
	out, err := json.Marshal(v) // encoding/json sorts map keys
	if err != nil {
		return string(b)
	}
	return string(out)
}
