package configschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/nexuscocreate/nexus/workspace"
)

// The generated files, relative to the repository's root.
const (
	ReferenceFile = "docs/configuration.md"
	SchemaFile    = "editors/vscode/schemas/nexus-config.schema.json"
)

// Files are the generated files' contents.
type Files struct {
	Reference []byte // docs/configuration.md
	Schema    []byte // editors/vscode/schemas/nexus-config.schema.json
}

// Generate builds both files from the config types, whose source is the
// directory workspaceDir (for their doc comments). It fails naming each
// field that has no doc comment: that comment is the key's description.
func Generate(workspaceDir string) (Files, error) {
	d, err := readDocs(workspaceDir)
	if err != nil {
		return Files{}, err
	}
	top, err := topKeys(d)
	if err != nil {
		return Files{}, err
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(schema(top)); err != nil {
		return Files{}, fmt.Errorf("config schema: %w", err)
	}
	return Files{Reference: reference(top), Schema: js.Bytes()}, nil
}

// topKeys are the sections of workspace.Config.
func topKeys(d docs) ([]*key, error) {
	w := &walker{docs: d}
	top := w.keys(reflect.TypeFor[workspace.Config](), reflect.ValueOf(workspace.DefaultConfig()).Elem(), "")
	if len(w.errs) > 0 {
		return nil, errors.New("config types: " + strings.Join(w.errs, "; "))
	}
	return top, nil
}

// Write generates both files into the repository at root.
func Write(root string) error {
	f, err := Generate(filepath.Join(root, "workspace"))
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{ReferenceFile: f.Reference, SchemaFile: f.Schema} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
