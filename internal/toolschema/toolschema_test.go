package toolschema

import (
	"encoding/json"
	"testing"
)

func TestPlain(t *testing.T) {
	for _, c := range []struct {
		name, schema, desc string
		wantSchema         string
		wantDesc           string
	}{
		{"oneOf of required fields",
			`{"type":"object","properties":{"command":{"type":"string"},"argv":{"type":"array"}},"oneOf":[{"required":["command"]},{"required":["argv"]}],"additionalProperties":false}`,
			"Run a command.",
			`{"additionalProperties":false,"properties":{"command":{"type":"string"},"argv":{"type":"array"}},"type":"object"}`,
			"Run a command.\n\nGive exactly one of: command; argv."},
		{"anyOf, a branch with two fields",
			`{"type":"object","anyOf":[{"required":["pattern"]},{"required":["glob","path","limit"]}]}`,
			"Search.",
			`{"type":"object"}`,
			"Search.\n\nGive at least one of: pattern; glob, path and limit."},
		{"allOf and not, said as JSON; type added",
			`{"properties":{"a":{"type":"string"}},"allOf":[{"properties":{"a":{"minLength":2}}}],"not":{"required":["b"]}}`,
			"",
			`{"properties":{"a":{"type":"string"}},"type":"object"}`,
			`The arguments must match all of: {"properties":{"a":{"minLength":2}}}. Do not give b.`},
		{"not of two fields",
			`{"type":"object","not":{"required":["a","b"]}}`, "",
			`{"type":"object"}`, `Do not give a and b together.`},
		{"not of a schema",
			`{"type":"object","not":{"properties":{"a":{"const":1}}}}`, "",
			`{"type":"object"}`, `The arguments must not match {"properties":{"a":{"const":1}}}.`},
		{"a combinator that is not a list",
			`{"type":"object","anyOf":{"required":["x"]}}`,
			"X.",
			`{"type":"object"}`,
			`X.` + "\n\n" + `The arguments must also match anyOf: {"required":["x"]}.`},
		{"nested combinators stay, schema unchanged byte for byte",
			`{"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}`,
			"N.",
			`{"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}`,
			"N."},
		{"not an object", `[1]`, "Odd.", `[1]`, "Odd."},
		{"not JSON", `{"type":`, "Odd.", `{"type":`, "Odd."},
		{"empty", ``, "", ``, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, d := Plain(json.RawMessage(c.schema), c.desc)
			if string(s) != c.wantSchema || d != c.wantDesc {
				t.Errorf("Plain = %s, %q\nwant    %s, %q", s, d, c.wantSchema, c.wantDesc)
			}
		})
	}
}
