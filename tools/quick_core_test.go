package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/core"
)

// Every core tool is validated on the quick path, and refuses unknown
// arguments through its schema (the handlers decode without checking).
func TestCoreToolsHaveQuickSchemas(t *testing.T) {
	ct, err := core.New(core.Config{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ct.Close()
	list := ct.List()
	list = append(list, ct.ExecuteCommand(core.ExecConfig{}))
	list = append(list, core.WebTools(core.WebConfig{Search: &core.SearchConfig{URL: "http://127.0.0.1/search"}})...)
	for _, tool := range list {
		if !tools.HasQuickSchema(tool) {
			t.Errorf("%s: the input schema is outside the quick subset", tool.Name)
		}
		var s struct {
			AdditionalProperties *bool `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tool.InputSchema, &s); err != nil || s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: the input schema does not set additionalProperties to false", tool.Name)
		}
	}
}
