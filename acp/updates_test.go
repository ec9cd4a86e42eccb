package acp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/agent"
)

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
		`"_meta":{"nexus/compaction":{"limit":32000,"messages":14,"tokensAfter":6000,"tokensBefore":38000,"trigger":"auto"}}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s\nlacks %s", data, want)
		}
	}
}
