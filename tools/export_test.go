package tools

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// HasQuickSchema reports whether a tool's input schema takes the quick
// validation path.
func HasQuickSchema(t Tool) bool {
	var s jsonschema.Schema
	return json.Unmarshal(t.InputSchema, &s) == nil && compileQuick(&s) != nil
}
