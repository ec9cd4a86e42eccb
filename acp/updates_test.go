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

// TestCompactionUpdate: a compaction reaches the client as a paragraph of
// the agent's message, with what it did in _meta.
func TestCompactionUpdate(t *testing.T) {
	c := agent.Compaction{Trigger: agent.CompactAuto, Messages: 14, TokensBefore: 38000, TokensAfter: 6000, Limit: 32000}
	m := &mapper{ws: "/ws"}
	got := m.convert(agent.Update{SessionUpdate: "command_output", Content: &agent.ContentBlock{Type: "text", Text: c.String()}, Compaction: &c})
	if len(got) != 1 || got[0].AgentMessageChunk == nil {
		t.Fatalf("convert = %+v", got)
	}
	data, err := json.Marshal(got[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"sessionUpdate":"agent_message_chunk"`, `"text":"\n\nCompacted 14 messages: 38k → 6.0k tokens`,
		`"_meta":{"nexus":{"compaction":{"limit":32000,"messages":14,"tokensAfter":6000,"tokensBefore":38000,"trigger":"auto"}}}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s\nlacks %s", data, want)
		}
	}
}

// TestCompletedCallDiff: a completed call's diff content is the change
// its checkpoint recorded, the old text with the new (none for an added
// file), in place of what its arguments say; without that, the
// arguments' diff stays.
func TestCompletedCallDiff(t *testing.T) {
	m := &mapper{ws: "/ws", diffs: map[string]acpsdk.ToolCallContent{}}
	done := []agent.ToolCallContent{{Type: "content", Content: &agent.ContentBlock{Type: "text", Text: "{}"}}}
	old, now, made := "alpha\n", "alpha\nomega\n", "x"
	m.convert(agent.Update{SessionUpdate: "tool_call", ToolCallID: "w1", ToolName: "write_file", Status: "pending",
		RawInput: json.RawMessage(`{"path":"a.txt","content":"alpha\nomega\n"}`)})
	out := m.convert(agent.Update{SessionUpdate: "tool_call_update", ToolCallID: "w1", Status: "completed", Content: done,
		Edits: []agent.Edit{{Path: "a.txt", Before: &old, After: &now}, {Path: "b.txt", After: &made}}})
	c := out[0].ToolCallUpdate.Content
	if len(c) != 3 || c[0].Diff == nil || c[0].Diff.Path != "/ws/a.txt" || c[0].Diff.OldText == nil || *c[0].Diff.OldText != old ||
		c[0].Diff.NewText != now || c[1].Diff == nil || c[1].Diff.OldText != nil || c[1].Diff.NewText != made || c[2].Content == nil {
		b, _ := json.Marshal(c)
		t.Errorf("content = %s", b)
	}
	m.convert(agent.Update{SessionUpdate: "tool_call", ToolCallID: "w2", ToolName: "write_file", Status: "pending",
		RawInput: json.RawMessage(`{"path":"big.bin","content":"x"}`)})
	c = m.convert(agent.Update{SessionUpdate: "tool_call_update", ToolCallID: "w2", Status: "completed", Content: done})[0].ToolCallUpdate.Content
	if len(c) != 2 || c[0].Diff == nil || c[0].Diff.NewText != "x" || c[0].Diff.OldText != nil {
		b, _ := json.Marshal(c)
		t.Errorf("without edits, content = %s", b)
	}
}
