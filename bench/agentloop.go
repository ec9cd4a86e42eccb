package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/core"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/workspace"
)

// instant is a model that answers at once: one get_current_time call a
// step, and text when told to stop. What is left of a step is the loop's
// own cost. It keeps the first request it is sent.
type instant struct {
	calls, stopAt int
	first         *llm.Request
}

func (m *instant) Profile() llm.Profile { return llm.Profile{Name: "bench"} }

func (m *instant) Stream(_ context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Response, error) {
	if m.first == nil {
		m.first = req
	}
	m.calls++
	if m.calls >= m.stopAt {
		return &llm.Response{Text: "done", Stop: llm.StopEndTurn}, nil
	}
	c := llm.ToolCall{ID: fmt.Sprint("c", m.calls), Name: "get_current_time", Arguments: json.RawMessage(`{}`)}
	emit(llm.Event{Kind: llm.EventToolCall, ToolCall: &c})
	return &llm.Response{ToolCalls: []llm.ToolCall{c}, Stop: llm.StopToolUse, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 10}}, nil
}

// benchAgentLoop prints the agent loop's own cost per step (history,
// pruning, the request, tool dispatch through the ToolManager, the
// session's log) with 1,000 messages in the history, beside the bare
// ToolManager call of the same tool.
func benchAgentLoop() error {
	ws, err := os.MkdirTemp("", "nexus-bench-agent-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	cfg := benchConfig()
	cfg.Messages.MaxLength = 1000
	cfg.Agent.MaxSteps = 1 << 20
	m, err := coreTools(ws)
	if err != nil {
		return err
	}
	defer m.Close()
	model := &instant{}
	svc, err := agent.NewService(agent.Options{Layout: workspace.NewLayout(ws), Config: cfg, Tools: m,
		NewProvider: func(llm.Profile) (llm.Provider, error) { return model, nil }})
	if err != nil {
		return err
	}
	defer svc.Close()
	person := access.Person("cli")
	info, err := svc.New(context.Background(), agent.NewSession{Owner: person})
	if err != nil {
		return err
	}
	// The anchor: the first request of a session of the workspace without
	// an AGENTS.md (the model answers at once).
	model.calls, model.stopAt = 0, 1
	bare, err := svc.New(context.Background(), agent.NewSession{Owner: person})
	if err != nil {
		return err
	}
	if _, err := svc.Prompt(context.Background(), person, bare.ID, "fill", agent.PromptOptions{}); err != nil {
		return err
	}
	withoutAgentsMD := model.first
	model.first = nil
	if err := svc.Delete(person, bare.ID); err != nil {
		return err
	}
	// An AGENTS.md of 2 KB, as a project has one, in the first request.
	if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), agentsMD(2<<10), 0o644); err != nil {
		return err
	}
	// Fill the history to 1,000 messages (each step adds two).
	model.calls, model.stopAt = 0, 600
	if _, err := svc.Prompt(context.Background(), person, info.ID, "fill", agent.PromptOptions{}); err != nil {
		return err
	}
	reportFirstRequest(model.first, withoutAgentsMD)
	const steps = 2000
	model.calls, model.stopAt = 0, steps+1
	start := time.Now()
	if _, err := svc.Prompt(context.Background(), person, info.ID, "go", agent.PromptOptions{OnUpdate: func(agent.Update) {}}); err != nil {
		return err
	}
	step := time.Since(start) / steps
	if n := svc.List(person)[0].Messages; n < 990 || n > 1000 {
		return fmt.Errorf("the history holds %d messages, want about 1,000", n)
	}
	anchor, err := timeIt(steps, func() error {
		if c := m.Execute(context.Background(), tools.ExecuteRequest{ToolName: "get_current_time", Party: person, Arguments: json.RawMessage(`{}`)}); c.Error != nil {
			return fmt.Errorf("%s", c.Error.Message)
		}
		return nil
	})
	if err != nil {
		return err
	}
	report("agent step at 1,000 msgs (history, pruning, dispatch, log)", step, anchor, "ToolManager.Execute alone, p50", "≤ 1ms a step")
	return nil
}

// benchConfig is the default configuration with one profile, "bench",
// whose model the bench's NewProvider plays.
func benchConfig() *workspace.Config {
	cfg := workspace.DefaultConfig()
	cfg.LLM = workspace.LLMConfig{Default: "bench", Profiles: map[string]workspace.LLMProfile{"bench": {Provider: "openai-compatible", BaseURL: "http://127.0.0.1:1/v1", Model: "m"}}}
	return cfg
}

// coreTools is a ToolManager of ws's core tools under the default policy,
// with no one to ask.
func coreTools(ws string) (*tools.Manager, error) {
	pol := policy.New(policy.Rules{Workspace: ws}, nil)
	m, err := tools.NewManager(tools.Options{Gate: pol.Gate(&policy.Approvers{}, time.Minute, nil)})
	if err != nil {
		return nil, err
	}
	ct, err := core.New(core.Config{Workspace: ws})
	if err != nil {
		m.Close()
		return nil, err
	}
	for _, t := range ct.List() {
		if err := m.Register(t); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

// agentsMD is an AGENTS.md of n bytes: lines of a project's instructions.
func agentsMD(n int) []byte {
	line := "- Run `go test ./...` before you say a change is done; keep functions short and name errors.\n"
	b := []byte("# Project instructions\n\n")
	for len(b)+len(line) <= n {
		b = append(b, line...)
	}
	return append(b, strings.Repeat("-", n-len(b))...)
}

// reportFirstRequest prints the size of the agent's first request, in
// tokens as Nexus counts them (agent.RequestTokens: four bytes a token):
// the system prompt (with the AGENTS.md), the tools' descriptions and
// schemas, the prompt; beside the same request without the AGENTS.md.
func reportFirstRequest(req, anchor *llm.Request) {
	if req == nil || anchor == nil {
		return
	}
	ours, bare := agent.RequestTokens(req), agent.RequestTokens(anchor)
	system := agent.Tokens(agent.Message{Role: agent.RoleSystem, Text: req.System})
	tools := agent.ToolTokens(req.Tools)
	fmt.Printf("%-44s %10s   %-34s %10s   +%d tok: system prompt ~%d, %d tools ~%d, the prompt ~%d\n",
		"first request's size, with a 2 KB AGENTS.md", fmt.Sprintf("~%d tok", ours), "vs without AGENTS.md", fmt.Sprintf("~%d tok", bare),
		ours-bare, system, len(req.Tools), tools, ours-system-tools)
}
