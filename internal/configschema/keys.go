// Package configschema generates the configuration reference
// (docs/configuration.md) and the JSON Schema of .nexus/config.yaml
// (editors/vscode/schemas/nexus-config.schema.json) from the types of
// [workspace.Config]: their yaml tags and doc comments, the defaults of
// [workspace.DefaultConfig], and the rules the loader checks (rules.go).
// `go generate ./workspace` (make schema) writes both files; TestGenerated
// fails when a checked-in one is stale. Start with [Generate].
//
// It walks the types itself rather than using a reflection library
// (invopop/jsonschema, google/jsonschema-go's For): the loader is a walker
// over the same yaml tags (inline, "-"), Size and Duration are strings or
// integers with their own syntax, every key may be null (keep the
// default) and every scalar may be an environment reference, and the doc
// comments must become descriptions keyed by yaml name. A walker that
// mirrors the loader says exactly that, where a library's mapping would
// need as much code to correct.
package configschema

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/nexuscocreate/nexus/workspace"
)

// kind is what a key holds, as the file writes it.
type kind int

const (
	kindString kind = iota
	kindInt
	kindFloat
	kindBool
	kindSize
	kindDuration
	kindStruct
	kindList
	kindMap
	kindAny // a mapping of anything (llm.*.extraBody)
)

// key is one key of the file, with what the reference and the schema say
// about it.
type key struct {
	name string // the yaml key
	path string // "tools.sandbox", "apps[].id", "llm.profiles.NAME.model"
	doc  string
	kind kind
	def  any // the default as the file would write it; nil for none
	rule rule

	fields  []*key // kindStruct: the keys inside, in field order
	inlined bool   // the key is a field of an inline struct (llm's profile)
	elem    *key   // kindList, kindMap: the element
}

var (
	sizeType     = reflect.TypeFor[workspace.Size]()
	durationType = reflect.TypeFor[workspace.Duration]()
)

// docs are the doc comments of the workspace package's struct types and
// their fields, read from its source.
type docs struct {
	types  map[string]string            // type name → doc
	fields map[string]map[string]string // type name → field name → doc
}

func readDocs(dir string) (docs, error) {
	d := docs{types: map[string]string{}, fields: map[string]map[string]string{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return d, err
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return d, fmt.Errorf("read the config types' doc comments: %w", err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, spec := range g.Specs {
				ts := spec.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				doc := ts.Doc
				if doc == nil && len(g.Specs) == 1 {
					doc = g.Doc
				}
				d.types[ts.Name.Name] = paragraph(doc.Text())
				fields := map[string]string{}
				for _, f := range st.Fields.List {
					text := f.Doc.Text()
					if text == "" {
						text = f.Comment.Text()
					}
					for _, n := range f.Names {
						fields[n.Name] = paragraph(text)
					}
				}
				d.fields[ts.Name.Name] = fields
			}
		}
	}
	return d, nil
}

// paragraph joins a comment's lines into one line, keeping blank lines as
// paragraph breaks.
func paragraph(text string) string {
	var paras []string
	for p := range strings.SplitSeq(strings.TrimSpace(text), "\n\n") {
		paras = append(paras, strings.Join(strings.Fields(p), " "))
	}
	return strings.Join(paras, "\n\n")
}

// walker builds the key tree of a type.
type walker struct {
	docs docs
	errs []string
}

// keys returns the keys of the workspace.Config type, defaults filled in
// from def.
func (w *walker) keys(t reflect.Type, def reflect.Value, path string) []*key {
	var out []*key
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if opts == "inline" {
			for _, k := range w.keys(f.Type, def.Field(i), path) {
				k.inlined = true
				out = append(out, k)
			}
			continue
		}
		k := w.key(t.Name()+"."+f.Name, f.Type, def.Field(i), join(path, name))
		k.name = name
		doc := w.docs.fields[t.Name()][f.Name]
		if doc == "" && k.kind == kindStruct {
			doc = typeDoc(w.docs.types[f.Type.Name()], f.Type.Name())
		}
		if doc == "" {
			w.errs = append(w.errs, fmt.Sprintf("%s.%s (%s) has no doc comment: it is the key's description", t.Name(), f.Name, k.path))
		}
		k.doc = rename(doc, f.Name, name)
		out = append(out, k)
	}
	return out
}

// key describes a value of type t at path; id is "Type.Field", the key
// of its rule.
func (w *walker) key(id string, t reflect.Type, def reflect.Value, path string) *key {
	k := &key{path: path, rule: rules[id]}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
		if def.IsValid() && !def.IsNil() {
			def = def.Elem()
		} else {
			def = reflect.Value{}
		}
	}
	switch {
	case t == sizeType:
		k.kind = kindSize
		if def.IsValid() && def.Int() != 0 {
			k.def = workspace.Size(def.Int()).String()
		}
	case t == durationType:
		k.kind = kindDuration
		if def.IsValid() && def.Int() != 0 {
			k.def = formatDuration(time.Duration(def.Int()))
		}
	case t.Kind() == reflect.String:
		k.kind = kindString
		if def.IsValid() && def.String() != "" {
			k.def = def.String()
		}
	case t.Kind() == reflect.Int:
		k.kind = kindInt
		if def.IsValid() && def.Int() != 0 {
			k.def = def.Int()
		}
	case t.Kind() == reflect.Float64:
		k.kind = kindFloat
		if def.IsValid() && def.Float() != 0 {
			k.def = def.Float()
		}
	case t.Kind() == reflect.Bool:
		k.kind = kindBool
		k.def = def.IsValid() && def.Bool()
	case t.Kind() == reflect.Struct:
		k.kind = kindStruct
		if !def.IsValid() {
			def = reflect.Zero(t)
		}
		k.fields = w.keys(t, def, path)
	case t.Kind() == reflect.Slice:
		k.kind = kindList
		k.elem = w.key(id+"[]", t.Elem(), reflect.Value{}, path+"[]")
		if def.IsValid() && def.Len() > 0 && t.Elem().Kind() == reflect.String {
			k.def = def.Interface()
		}
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Interface:
		k.kind = kindAny
	case t.Kind() == reflect.Map:
		k.kind = kindMap
		k.elem = w.key(id+"[]", t.Elem(), reflect.Value{}, path+"."+k.rule.placeholder())
	default:
		w.errs = append(w.errs, fmt.Sprintf("%s: no schema for Go type %s", path, t))
	}
	return k
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// rename starts a field's doc with its yaml key instead of its Go name:
// "MaxSteps bounds …" → "maxSteps bounds …".
func rename(doc, goName, yamlName string) string {
	if rest, ok := strings.CutPrefix(doc, goName); ok && (rest == "" || rest[0] == ' ' || rest[0] == ',') {
		return yamlName + rest
	}
	return doc
}

// typeDoc is a struct type's doc as a section's description: "LogConfig is
// the log section: where …" → "Where …".
func typeDoc(doc, name string) string {
	rest, ok := strings.CutPrefix(doc, name+" is ")
	if !ok {
		return doc
	}
	if head, tail, ok := strings.Cut(rest, ": "); ok && len(strings.Fields(head)) <= 3 {
		rest = tail
	}
	r := []rune(rest)
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r)
}

// formatDuration writes d as the file would: "30m", "1m30s", "100ms".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
