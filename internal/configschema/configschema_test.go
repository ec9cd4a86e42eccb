package configschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/nexuscocreate/nexus/workspace"
)

const root = "../.."

// TestGenerated fails when a checked-in generated file is not what the
// config types generate, as check-proto does for protobuf.
func TestGenerated(t *testing.T) {
	f, err := Generate(filepath.Join(root, "workspace"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{ReferenceFile: f.Reference, SchemaFile: f.Schema} {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run 'make schema' (go generate ./workspace) and commit the result", name)
		}
	}
}

// keys are the sections of the file.
func keys(t *testing.T) []*key {
	t.Helper()
	d, err := readDocs(filepath.Join(root, "workspace"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := topKeys(d)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// resolved is the checked-in schema, ready to validate with.
func resolved(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, SchemaFile))
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// instance is a YAML document as the JSON value the schema validates, as
// an editor's YAML support sees it (environment references unexpanded).
func instance(t *testing.T, doc []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// anyEnv is an environment where every variable is set, to 1 (a number,
// a size, a word): documents' references stand for real values.
func anyEnv(string) (string, bool) { return "1", true }

// TestSchemaAcceptsExamples: every config the project shows or runs with
// that nexusd loads, the schema accepts too: the example workspace's,
// the YAML blocks of the README and docs/ that are configs, and the
// integration tests' config literals.
func TestSchemaAcceptsExamples(t *testing.T) {
	s := resolved(t)
	type example struct {
		from, where string // from: example, docs or integration
		doc         []byte
	}
	var all []example
	data, err := os.ReadFile(filepath.Join(root, "examples/workspace/.nexus/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, example{"example", "examples/workspace/.nexus/config.yaml", data})
	pages := []string{filepath.Join(root, "README.md")}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, md := range pages {
		data, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		for i, block := range yamlBlocks(string(data)) {
			all = append(all, example{"docs", fmt.Sprintf("%s, YAML block %d", md, i+1), []byte(block)})
		}
	}
	lits, err := stringLiterals(filepath.Join(root, "integration"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lits {
		all = append(all, example{"integration", l.where, []byte(l.text)})
	}

	sections := map[string]bool{}
	for _, k := range keys(t) {
		sections[k.name] = true
	}
	checked := map[string]int{}
	for _, e := range all {
		if !isConfig(sections, e.doc) {
			continue
		}
		if _, err := workspace.ParseConfig(e.where, e.doc, anyEnv); err != nil {
			continue // a test of a bad config, or a fragment
		}
		checked[e.from]++
		if err := s.Validate(instance(t, e.doc)); err != nil {
			t.Errorf("%s: nexusd loads it, the schema refuses it: %v\n%s", e.where, err, e.doc)
		}
	}
	t.Logf("configs checked, by where they come from: %v", checked)
	if checked["example"] != 1 || checked["integration"] < 20 || checked["docs"] < 5 {
		t.Errorf("too few configs found (%v): did the README, docs/ or integration tests move?", checked)
	}
}

// isConfig reports whether doc is a YAML mapping whose keys are all
// sections of the file: a config, or a part of one.
func isConfig(sections map[string]bool, doc []byte) bool {
	var m map[string]any
	if yaml.Unmarshal(doc, &m) != nil || len(m) == 0 {
		return false
	}
	for k := range m {
		if !sections[k] {
			return false
		}
	}
	return true
}

var fence = regexp.MustCompile("(?ms)^\\s*```ya?ml\\s*\n(.*?)^\\s*```")

// yamlBlocks are the fenced YAML blocks of a Markdown page, unindented.
func yamlBlocks(md string) []string {
	var out []string
	for _, m := range fence.FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return out
}

type literal struct{ where, text string }

// stringLiterals are the string constants of the Go files in dir: the
// whole literals, and the values of constant declarations.
func stringLiterals(dir string) ([]literal, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []literal
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					out = append(out, literal{fset.Position(lit.Pos()).String(), s})
				}
			}
			return true
		})
	}
	return out, nil
}

// TestSchemaRejects: what nexusd refuses for a key's name or a value's
// type, the schema refuses too.
func TestSchemaRejects(t *testing.T) {
	s := resolved(t)
	for _, doc := range []string{
		"colour: blue\n",                          // an unknown section
		"tools:\n  sandbx: off\n",                 // an unknown key
		"apps:\n  - id: planner\n    grant: {}\n", // an unknown key in a list's mapping
		"llm:\n  profiles:\n    p: {provider: openai, model: m, temprature: 1}\n", // in a map's value
		"agent:\n  maxSteps: lots\n",                                          // a word for an integer
		"definitions:\n  watch: maybe\n",                                      // for a boolean
		"apps:\n  planner: {}\n",                                              // a mapping for a list
		"tools: [read_file]\n",                                                // a list for a mapping
		"tools:\n  sandbox: none\n",                                           // not one of the values
		"tools:\n  policy: {write_file: sometimes}\n",                         // nor in a map
		"definitions:\n  maxFileSize: 10 megs\n",                              // not a size
		"mcp:\n  callTimeout: 30\n",                                           // a duration without its unit
		"apps:\n  - id: Planner\n",                                            // not an app id
		"apps:\n  - tokenFile: t\n",                                           // no id
		"llm:\n  profiles:\n    p: {provider: openai}\n",                      // no model
		"llm:\n  profiles:\n    p: {provider: openai-compatible, model: m}\n", // no baseURL
		"messages:\n  maxLength: 0\n",                                         // under the least
		"mcp:\n  http: {maxSessionsPerToken: 10001}\n",                        // over the most
		"runtime:\n  backend: redis\n",                                        // redis without a url
		"grpc:\n  tls: {cert: c.pem}\n",                                       // a cert without its key
	} {
		if _, err := workspace.ParseConfig("config.yaml", []byte(doc), anyEnv); err == nil {
			t.Errorf("nexusd loads %q; the case is wrong", doc)
		}
		if err := s.Validate(instance(t, []byte(doc))); err == nil {
			t.Errorf("the schema accepts %q, which nexusd refuses", doc)
		}
	}
}

// TestRulesAgree sets each key, alone in an otherwise valid file, to values
// of its kind (in range and out, of its type and not) and holds the schema
// to the loader: the schema never refuses what nexusd loads (no false
// alarm in the editor), and refuses what nexusd refuses but for what it
// cannot know (looser).
func TestRulesAgree(t *testing.T) {
	s := resolved(t)
	var probe func(k *key)
	n := 0
	probe = func(k *key) {
		for _, v := range probes(k) {
			doc := base()
			set(doc, strings.Split(k.path, "."), v)
			text, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, lerr := workspace.ParseConfig("config.yaml", text, anyEnv)
			serr := s.Validate(instance(t, text))
			n++
			switch {
			case lerr == nil && serr != nil:
				t.Errorf("%s: %#v: nexusd loads it, the schema refuses it: %v", k.path, v, serr)
			case lerr != nil && serr == nil && !looser(k, v):
				t.Errorf("%s: %#v: the schema accepts it, nexusd refuses it: %v", k.path, v, lerr)
			}
		}
		switch k.kind {
		case kindStruct:
			for _, f := range k.fields {
				probe(f)
			}
		case kindList, kindMap:
			if k.elem.kind == kindStruct || k.kind == kindMap {
				probe(k.elem)
			}
		}
	}
	for _, k := range keys(t) {
		probe(k)
	}
	t.Logf("%d probes", n)
}

// base is a valid file with an app, an llm profile and a hook of each
// event, for the keys below apps[], llm.profiles.NAME and hooks.EVENT[].
func base() map[string]any {
	return map[string]any{
		"apps": []any{map[string]any{"id": "probe"}},
		"llm":  map[string]any{"profiles": map[string]any{"p": map[string]any{"provider": "openai", "model": "m"}}},
		"hooks": map[string]any{
			"preToolUse":       []any{map[string]any{"command": []any{"x"}}},
			"postToolUse":      []any{map[string]any{"command": []any{"x"}}},
			"userPromptSubmit": []any{map[string]any{"command": []any{"x"}}},
		},
	}
}

// set puts v at path in doc: "apps[]" is the first app, a map's key
// placeholder ("NAME", "TOOL") its entry "p".
func set(doc map[string]any, path []string, v any) {
	m := doc
	for i, p := range path {
		last := i == len(path)-1
		if name, ok := strings.CutSuffix(p, "[]"); ok {
			if last {
				m[name] = []any{v}
				return
			}
			m = m[name].([]any)[0].(map[string]any)
			continue
		}
		if p == "NAME" || p == "TOOL" {
			p = "p"
		}
		if last {
			m[p] = v
			return
		}
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
}

// probes are the values tried for k.
func probes(k *key) []any {
	common := []any{nil, []any{"x"}, map[string]any{"x": 1}}
	r := k.rule
	switch k.kind {
	case kindString:
		if r.pattern != "" {
			return append(common, "x", "", "Bad id", "probe2", strings.Repeat("AB:", 31)+"AB", strings.Repeat("ab", 32))
		}
		out := append(common, "x", "", 5, true, "openai-compatible")
		for _, e := range r.enum {
			out = append(out, e)
		}
		return out
	case kindInt:
		return append(common, -1, 0, 1, 2, 10000, 10001, 1.5, "lots")
	case kindFloat:
		return append(common, -0.5, 0, 1, 2, 2.5, "warm")
	case kindBool:
		return append(common, true, false, "maybe")
	case kindSize:
		return append(common, 0, 1, -1, "10MiB", "1 GiB", 1<<30, 1<<30+1, "10 megs")
	case kindDuration:
		return append(common, "0s", "1ms", "10s", "11s", "24h", "25h", "1m30s", "soon", 5)
	case kindList:
		return []any{nil, []any{}, []any{"x", 5}, "x", map[string]any{"x": 1}}
	case kindMap, kindAny:
		return []any{nil, map[string]any{}, "x", []any{"x"}}
	}
	return []any{nil, map[string]any{}, "x", []any{"x"}} // kindStruct
}

// looser reports whether the schema may accept v at k though nexusd
// refuses it, because no JSON Schema of the key can tell: a duration's
// range (it is text), and names that must be among other keys' values.
func looser(k *key, v any) bool {
	if _, ok := v.(string); ok && k.kind == kindDuration && (k.rule.positive || k.rule.maxDur != 0) {
		return true
	}
	switch k.path {
	case "llm.default", "mcp.sampling.profile":
		return v != nil && v != "" // names an llm profile
	}
	return false
}
