package daemon

import (
	"log/slog"
	"testing"

	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/workspace"
)

// TestSamplingLimits: an MCP server's sampling request is answered within
// the limits of an agent's answer (agent.maxAnswerSize and
// agent.maxToolCallSize), which the error over them names.
func TestSamplingLimits(t *testing.T) {
	cfg := &workspace.Config{}
	cfg.Agent.MaxAnswerSize, cfg.Agent.MaxToolCallSize = 4096, 2048
	cfg.MCP.Sampling.Profile = "local"
	cfg.LLM.Profiles = map[string]workspace.LLMProfile{"local": {Provider: "openai-compatible", Model: "tiny"}}
	s := sampling(cfg, Options{}, slog.New(slog.DiscardHandler))
	if s == nil || s.Limits != (llm.Limits{Answer: 4096, ToolCall: 2048}) {
		t.Fatalf("sampling %+v: want the agent's limits", s)
	}
}
