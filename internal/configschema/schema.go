package configschema

import (
	"encoding/json"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// The patterns of the values the loader reads from text. They are RE2 and
// ECMA-262 alike, for the Go tests and for VS Code.
const (
	// envPattern is an environment reference, which may stand for any
	// scalar: the schema cannot know its value.
	envPattern      = `\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`
	sizePattern     = `^\s*[0-9]+\s*(B|KB|MB|GB|KiB|MiB|GiB)?\s*$`
	durationPattern = `^\s*\+?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+\s*$`
)

// schema is the JSON Schema (draft-07, what VS Code's YAML support reads
// best) of a file whose top-level keys are top.
func schema(top []*key) *jsonschema.Schema {
	s := object(top, rule{}, nullable)
	s.Schema = "http://json-schema.org/draft-07/schema#"
	s.Title = "Nexus workspace configuration (.nexus/config.yaml)"
	s.Description = "The configuration of a Nexus workspace. Every key is optional; a key left empty keeps its default. See docs/configuration.md."
	return s
}

// nullability says whether a mapping may be null: a key with nothing after
// it keeps its default, but a list element or a map value must be there.
type nullability bool

const (
	nullable    nullability = true
	notNullable nullability = false
)

func object(fields []*key, r rule, null nullability) *jsonschema.Schema {
	s := &jsonschema.Schema{
		Properties:           map[string]*jsonschema.Schema{},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}, // unknown keys are errors
		Required:             r.required,
	}
	s.Types = []string{"object"}
	if null {
		s.Types = append(s.Types, "null")
	}
	for _, f := range fields {
		p := schemaOf(f, nullable)
		p.Description = f.doc
		if f.def != nil {
			p.Default, _ = json.Marshal(f.def)
		}
		if slices.Contains(r.required, f.name) {
			// A required key's value is there: null would not keep a default.
			p = &jsonschema.Schema{Description: p.Description, AllOf: []*jsonschema.Schema{p, {Not: &jsonschema.Schema{Type: "null"}}}}
			p.AllOf[0].Description = ""
		}
		s.Properties[f.name] = p
		s.PropertyOrder = append(s.PropertyOrder, f.name)
	}
	if r.object != nil {
		r.object(s)
	}
	return s
}

// schemaOf is the schema of k's values, without its description.
func schemaOf(k *key, null nullability) *jsonschema.Schema {
	env := &jsonschema.Schema{Type: "string", Pattern: envPattern}
	r := k.rule
	switch k.kind {
	case kindString:
		switch {
		case r.enum != nil:
			e := &jsonschema.Schema{}
			for _, v := range r.enum {
				e.Enum = append(e.Enum, v)
			}
			if r.emptyOK {
				e.Enum = append(e.Enum, "")
			}
			if null {
				e.Enum = append(e.Enum, nil)
			}
			return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{e, env}}
		case r.pattern != "":
			// patternErrorMessage is the YAML extension's (and ours): the
			// pattern in words.
			p := &jsonschema.Schema{Types: []string{"string", "null"}, Pattern: r.pattern, Extra: map[string]any{"patternErrorMessage": "must be " + r.patternDoc}}
			return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{p, env}}
		}
		// The loader takes a number's or a boolean's text as a string.
		s := &jsonschema.Schema{Types: []string{"string", "number", "boolean", "null"}}
		if r.nonEmpty {
			s.MinLength = &one
		}
		return s
	case kindInt, kindFloat:
		t := "integer"
		if k.kind == kindFloat {
			t = "number"
		}
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Types: []string{t, "null"}, Minimum: r.min, Maximum: r.max}, env}}
	case kindBool:
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Types: []string{"boolean", "null"}}, env}}
	case kindSize:
		n := &jsonschema.Schema{Types: []string{"integer", "null"}, Minimum: num(0), Maximum: r.max}
		if r.positive {
			n.Minimum = num(1)
		}
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{n, {Type: "string", Pattern: sizePattern}, env}}
	case kindDuration:
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Types: []string{"string", "null"}, Pattern: durationPattern}, env}}
	case kindStruct:
		return object(k.fields, r, null)
	case kindList:
		s := &jsonschema.Schema{Types: []string{"array", "null"}, Items: schemaOf(k.elem, notNullable)}
		if r.nonEmpty {
			s.MinItems = &one
		}
		return s
	case kindMap:
		return &jsonschema.Schema{Types: []string{"object", "null"}, AdditionalProperties: schemaOf(k.elem, notNullable)}
	}
	return &jsonschema.Schema{Types: []string{"object", "null"}} // kindAny
}
