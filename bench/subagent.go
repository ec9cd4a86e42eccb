package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/workspace"
)

// handoff is a model that answers at once and times the gap between an
// answer with a call and the next request: the first step of each prompt
// calls tool (task or get_current_time), a subagent answers text, the
// parent's second step ends the turn.
type handoff struct {
	mu       sync.Mutex
	tool     string
	answered time.Time       // when the last call left the model
	gaps     []time.Duration // from it to the next request
}

func (m *handoff) Profile() llm.Profile { return llm.Profile{Name: "bench"} }

func (m *handoff) Stream(_ context.Context, req *llm.Request, _ func(llm.Event)) (*llm.Response, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.answered.IsZero() {
		m.gaps = append(m.gaps, now.Sub(m.answered))
		m.answered = time.Time{}
	}
	last := req.Messages[len(req.Messages)-1]
	if strings.Contains(req.System, "a subagent of the Nexus agent") || last.Role == agent.RoleToolResult {
		return &llm.Response{Text: "done", Stop: llm.StopEndTurn}, nil
	}
	args := json.RawMessage(`{}`)
	if m.tool == agent.TaskToolName {
		args = json.RawMessage(`{"agent":"reviewer","prompt":"Read README.md and say what it is about."}`)
	}
	c := llm.ToolCall{ID: "c1", Name: m.tool, Arguments: args}
	m.answered = time.Now()
	return &llm.Response{ToolCalls: []llm.ToolCall{c}, Stop: llm.StopToolUse}, nil
}

func (m *handoff) median(tool string, run func() error, n int) (time.Duration, error) {
	m.mu.Lock()
	m.tool, m.gaps = tool, nil
	m.mu.Unlock()
	for range n {
		if err := run(); err != nil {
			return 0, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.gaps) != n {
		return 0, fmt.Errorf("%d of %d %s calls reached a next request", len(m.gaps), n, tool)
	}
	slices.Sort(m.gaps)
	return m.gaps[n/2], nil
}

// benchSubagent prints the time a subagent adds before its first request
// (from the parent's answer with a task call to the subagent's first
// request: its session, system prompt with a 2 KB AGENTS.md, tools and
// history), beside a step of the loop with one tool call (from the
// model's answer with a get_current_time call to the next request: the
// ToolManager's call and the history) in the same service.
func benchSubagent() error {
	ws, err := os.MkdirTemp("", "nexus-bench-subagent-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), agentsMD(2<<10), 0o644); err != nil {
		return err
	}
	m, err := coreTools(ws)
	if err != nil {
		return err
	}
	defer m.Close()
	brief := agent.DefinitionFile{Path: "agents/reviewer.md", Revision: strings.Repeat("a", 40),
		Content: []byte("---\ndescription: Reviews files\ntools: [read_file, list_directory, search_files]\n---\nYou review files and report in a few lines.\n")}
	model := &handoff{}
	svc, err := agent.NewService(agent.Options{Layout: workspace.NewLayout(ws), Config: benchConfig(), Tools: m,
		NewProvider: func(llm.Profile) (llm.Provider, error) { return model, nil },
		ReadDefinitions: func(_ access.Party, dir string) ([]agent.DefinitionFile, error) {
			if dir == agent.AgentsDir {
				return []agent.DefinitionFile{brief}, nil
			}
			return nil, nil
		}})
	if err != nil {
		return err
	}
	defer svc.Close()
	person := access.Person("cli")
	info, err := svc.New(context.Background(), agent.NewSession{Owner: person})
	if err != nil {
		return err
	}
	prompt := func() error {
		if _, err := svc.Prompt(context.Background(), person, info.ID, "/clear", agent.PromptOptions{}); err != nil {
			return err
		}
		_, err := svc.Prompt(context.Background(), person, info.ID, "go", agent.PromptOptions{OnUpdate: func(agent.Update) {}})
		return err
	}
	const n = 300
	anchor, err := model.median("get_current_time", prompt, n)
	if err != nil {
		return err
	}
	ours, err := model.median(agent.TaskToolName, prompt, n)
	if err != nil {
		return err
	}
	report("subagent's start, before its first request", ours, anchor, "a step with one tool call, p50", "≤ 5ms")
	return nil
}
