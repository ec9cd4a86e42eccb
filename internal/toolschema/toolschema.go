// Package toolschema gives a tool's input schema in the form that model
// providers' function calling accepts: no oneOf, anyOf, allOf or not at its
// top. The model adapters (llm) and the MCP gateway, whose clients
// hand the schemas to their providers, both use it. Start with [Plain].
package toolschema

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

// Plain is schema as every provider accepts it, with description: the
// top-level combinators of schema are taken out and said at the end of the
// description, in words a model can follow ("Give exactly one of: command;
// argv."). The full schema still holds where a call is validated (the
// ToolManager), so a call that breaks the rule fails there with
// invalid_arguments, as before. A schema without top-level combinators, or
// that is not a JSON object, is returned as it is, and so is description.
func Plain(schema json.RawMessage, description string) (json.RawMessage, string) {
	if !isJSONObject(schema) {
		return schema, description
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(schema, &m); err != nil {
		return schema, description
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
		return schema, description
	}
	if _, ok := m["type"]; !ok {
		m["type"] = json.RawMessage(`"object"`)
	}
	plain, err := json.Marshal(m)
	if err != nil {
		return schema, description
	}
	return plain, strings.TrimSpace(description + "\n\n" + strings.Join(rules, " "))
}

// isJSONObject reports whether b is a valid JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// combinatorRule says in words what keyword k with value v asks of the
// arguments. A branch that only requires fields is said as their names;
// any other branch as its compact JSON.
func combinatorRule(k string, v json.RawMessage) string {
	if k == "not" {
		if fields, ok := requiredOnly(v); ok {
			if len(fields) == 1 {
				return "Do not give " + fields[0] + "."
			}
			return "Do not give " + andList(fields) + " together."
		}
		return "The arguments must not match " + compactJSON(v) + "."
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
	if fields, ok := requiredOnly(b); ok {
		return andList(fields)
	}
	return compactJSON(b)
}

// requiredOnly is the fields b requires, when that is all b says.
func requiredOnly(b json.RawMessage) ([]string, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || len(m) != 1 {
		return nil, false
	}
	var req []string
	if err := json.Unmarshal(m["required"], &req); err != nil || len(req) == 0 {
		return nil, false
	}
	return req, true
}

// andList is "a", "a and b", "a, b and c".
func andList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
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
