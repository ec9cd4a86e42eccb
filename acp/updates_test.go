package acp

import (
	"encoding/json"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/nexuscocreate/nexus/agent"
)

// TestSubagentCallMeta: a subagent's tool call and its updates carry the
// task call they are under in _meta.nexus.parentToolCallId; the parent's
// own calls carry no _meta.
func TestSubagentCallMeta(t *testing.T) {
	m := &mapper{diffs: map[string]acpsdk.ToolCallContent{}}
	for _, u := range []agent.Update{
		{SessionUpdate: "tool_call", ToolCallID: "c1", Title: "reviewer: Read a.txt", Kind: "read", Status: "pending", ParentToolCallID: "t1"},
		{SessionUpdate: "tool_call_update", ToolCallID: "c1", Status: "completed", ParentToolCallID: "t1"},
	} {
		out := m.convert(u)
		if len(out) != 1 {
			t.Fatalf("convert(%+v) = %+v", u, out)
		}
		b, _ := json.Marshal(out[0])
		if !strings.Contains(string(b), `"_meta":{"nexus":{"parentToolCallId":"t1"}}`) {
			t.Errorf("%s has no _meta naming the task call", b)
		}
	}
	b, _ := json.Marshal(m.convert(agent.Update{SessionUpdate: "tool_call", ToolCallID: "t1", Title: "Subagent reviewer: x", Kind: "think", Status: "pending"})[0])
	if strings.Contains(string(b), "_meta") {
		t.Errorf("the parent's call has a _meta: %s", b)
	}
}
