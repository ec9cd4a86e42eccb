package tools

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func resolve(t *testing.T, text string) (*jsonschema.Schema, *jsonschema.Resolved) {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return &s, rs
}

// TestQuickNeverAcceptsMore checks the quick validator against
// jsonschema-go on random schemas of the quick subset and random values:
// they must agree on every value, so that the quick path is an exact
// shortcut and never lets through what the full validator refuses.
func TestQuickNeverAcceptsMore(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var compiled, accepted, rejected int
	for range 3000 {
		text := randomSchema(r, 0)
		s, rs := resolve(t, text)
		q := compileQuick(s)
		if q == nil {
			continue
		}
		compiled++
		for range 30 {
			var v any
			raw := randomValue(r, 0)
			if err := json.Unmarshal([]byte(raw), &v); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			full := rs.Validate(v) == nil
			quick := q.accepts([]byte(raw))
			// Escapes are left to the full validator; otherwise the two agree.
			if quick && !full || !strings.Contains(raw, `\`) && quick != full {
				t.Fatalf("schema %s, value %s: quick says %v, jsonschema-go says %v (%v)", text, raw, quick, full, rs.Validate(v))
			}
			if full {
				accepted++
			} else {
				rejected++
			}
		}
	}
	if compiled < 2000 || accepted < 5000 || rejected < 5000 {
		t.Fatalf("too little coverage: %d schemas compiled, %d values accepted, %d rejected", compiled, accepted, rejected)
	}
}

func TestQuickSubset(t *testing.T) {
	for _, c := range []struct {
		schema string
		quick  bool
	}{
		{`{"type":"object","properties":{"path":{"type":"string","description":"d"},"n":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"argv":{"type":"array","items":{"type":"string"},"minItems":1}}}`, true},
		{`{"type":["string","null"],"enum":["a",null]}`, true},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, true},
		{`{"type":"object","additionalProperties":{"type":"number"}}`, true},
		{`{"$schema":"https://example.com/my-schema","type":"object"}`, false},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`, false},
		{`{"anyOf":[{"type":"string"},{"type":"number"}]}`, true},
		{`{"oneOf":[{"required":["a"]},{"required":["b"]}],"not":{"required":["c"]}}`, true},
		{`{"anyOf":[{"type":"string"},{"$ref":"#"}]}`, false},
		{`{"type":"object","x-vendor":1}`, false},
		{`{"enum":[{"a":1}]}`, false},
		{`{"type":"array","prefixItems":[{"type":"string"}]}`, false},
		{`{"not":{}}`, true},
		{`{"if":{"type":"string"},"then":{"minLength":1}}`, false},
	} {
		s, _ := resolve(t, c.schema)
		if got := compileQuick(s) != nil; got != c.quick {
			t.Errorf("%s: quick form %v, want %v", c.schema, got, c.quick)
		}
	}
}

var (
	propNames  = []string{"a", "b", "path", "ü"}
	typeNames  = []string{"null", "boolean", "integer", "number", "string", "array", "object"}
	someValues = []string{`null`, `true`, `false`, `0`, `-0`, `1`, `2.5`, `-3`, `1e3`, `""`, `"a"`, `"ab"`, `"ü"`, `"abc1"`,
		`1.0`, `-0.0`, `1E0`, `2.50`, `"a\u0062"`, `"\u00fc"`, `"x\"y"`, `[]`, `{}`, `[ ]`, `{ }`}
)

func randomSchema(r *rand.Rand, depth int) string {
	var kv []string
	add := func(k, v string) { kv = append(kv, fmt.Sprintf("%q:%s", k, v)) }
	if r.IntN(3) > 0 {
		if r.IntN(4) == 0 {
			add("type", fmt.Sprintf("[%q,%q]", typeNames[r.IntN(7)], typeNames[r.IntN(7)]))
		} else {
			add("type", fmt.Sprintf("%q", typeNames[r.IntN(7)]))
		}
	}
	if r.IntN(8) == 0 {
		n := r.IntN(3)
		var es []string
		for range n + 1 {
			es = append(es, someValues[r.IntN(21)]) // scalars only
		}
		add("enum", "["+strings.Join(es, ",")+"]")
	}
	if r.IntN(12) == 0 {
		add("const", someValues[r.IntN(21)])
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		if r.IntN(8) == 0 {
			add(k, []string{"0", "1", "2.5", "-1"}[r.IntN(4)])
		}
	}
	for _, k := range []string{"minLength", "maxLength", "minItems", "maxItems"} {
		if r.IntN(8) == 0 {
			add(k, fmt.Sprint(r.IntN(3)))
		}
	}
	if r.IntN(10) == 0 {
		add("pattern", `"^[a-z]+$"`)
	}
	if r.IntN(10) == 0 {
		add("description", `"words"`)
	}
	if depth < 2 {
		if r.IntN(4) == 0 {
			add("items", randomSchema(r, depth+1))
		}
		if r.IntN(2) == 0 {
			var ps []string
			for _, name := range propNames {
				if r.IntN(2) == 0 {
					ps = append(ps, fmt.Sprintf("%q:%s", name, randomSchema(r, depth+1)))
				}
			}
			add("properties", "{"+strings.Join(ps, ",")+"}")
		}
		if r.IntN(4) == 0 {
			add("required", fmt.Sprintf("[%q]", propNames[r.IntN(len(propNames))]))
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			if r.IntN(10) == 0 {
				add(k, "["+randomSchema(r, depth+1)+","+randomSchema(r, depth+1)+"]")
			}
		}
		if r.IntN(12) == 0 {
			add("not", randomSchema(r, depth+1))
		}
		switch r.IntN(5) {
		case 0:
			add("additionalProperties", "false")
		case 1:
			add("additionalProperties", randomSchema(r, depth+1))
		}
	}
	return "{" + strings.Join(kv, ",") + "}"
}

func randomValue(r *rand.Rand, depth int) string {
	sp := func() string { return []string{"", "", " ", "\n\t "}[r.IntN(4)] }
	switch n := r.IntN(10); {
	case depth >= 3 || n < 5:
		return someValues[r.IntN(len(someValues))]
	case n < 7:
		var items []string
		for range r.IntN(4) {
			items = append(items, sp()+randomValue(r, depth+1)+sp())
		}
		return "[" + strings.Join(items, ",") + "]"
	default:
		var kv []string
		for _, name := range propNames {
			if r.IntN(2) == 0 {
				kv = append(kv, fmt.Sprintf("%s%q%s:%s%s", sp(), name, sp(), sp(), randomValue(r, depth+1)))
			}
		}
		if r.IntN(6) == 0 {
			kv = append(kv, `"extra":1`)
		}
		if r.IntN(10) == 0 && len(kv) > 0 {
			kv = append(kv, kv[r.IntN(len(kv))]) // a duplicate key
		}
		if r.IntN(20) == 0 {
			kv = append(kv, `"p\u0061th":"x"`) // an escaped key
		}
		return "{" + strings.Join(kv, ",") + "}"
	}
}

// FuzzQuickAccepts feeds arbitrary JSON texts to the quick validator of a
// few schemas: whatever it accepts, jsonschema-go must accept.
func FuzzQuickAccepts(f *testing.F) {
	schemas := []string{
		`{"type":"object","properties":{"path":{"type":"string","minLength":1,"pattern":"^[a-z/]+$"},"n":{"type":"integer","minimum":1,"maximum":5},"tags":{"type":"array","items":{"type":"string"},"maxItems":2}},"required":["path"],"additionalProperties":false}`,
		`{"oneOf":[{"required":["a"]},{"required":["b"]}],"not":{"required":["c"]},"additionalProperties":{"enum":[1,"x",null,true]}}`,
		`{"type":["array","null"],"items":{"anyOf":[{"type":"number","exclusiveMinimum":0},{"const":"z"}]}}`,
	}
	for _, seed := range []string{`{"path":"a/b","n":2,"tags":["x"]}`, `{"a":1}`, `[1,"z",null]`, `null`, ` {"b" : "x" , "b":1} `, `[1e400]`} {
		f.Add(seed)
	}
	type compiled struct {
		q  *quickSchema
		rs *jsonschema.Resolved
	}
	var cs []compiled
	for _, text := range schemas {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(text), &s); err != nil {
			f.Fatal(err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			f.Fatal(err)
		}
		cs = append(cs, compiled{compileQuick(&s), rs})
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !json.Valid([]byte(text)) {
			return
		}
		for i, c := range cs {
			if !c.q.accepts([]byte(text)) {
				continue
			}
			var v any
			if err := json.Unmarshal([]byte(text), &v); err != nil {
				t.Fatalf("schema %d accepts %q, which does not decode: %v", i, text, err)
			}
			if err := c.rs.Validate(v); err != nil {
				t.Fatalf("schema %d: quick accepts %q, jsonschema-go does not: %v", i, text, err)
			}
		}
	})
}
