package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nexuscocreate/nexus/agent"
)

// benchAgent prints what the agent's message history costs per message at
// 100,000 messages, beside appending to a slice (the floor): pruning by
// count with the system prompt kept, and by token budget.
func benchAgent() error {
	const n = 100_000
	msgs := make([]agent.Message, n)
	for i := range msgs {
		switch i % 4 {
		case 1:
			msgs[i] = agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: fmt.Sprint("c", i), Name: "read_file", Arguments: json.RawMessage(`{"path":"README.md"}`)}}}
		case 2:
			msgs[i] = agent.Message{Role: agent.RoleToolResult, Result: &agent.ToolResult{CallID: fmt.Sprint("c", i-1), Name: "read_file", Content: "# Nexus\n\nmake demo\nmake test\n"}}
		default:
			msgs[i] = agent.Message{Role: agent.RoleUser, Text: "what does the README say about make test?"}
		}
	}
	best := func(f func() error) (time.Duration, error) {
		var min time.Duration
		for range 5 {
			start := time.Now()
			if err := f(); err != nil {
				return 0, err
			}
			if d := time.Since(start); min == 0 || d < min {
				min = d
			}
		}
		return min / n, nil
	}
	var sink []agent.Message
	floor, _ := best(func() error {
		// One append a message, as History.Add does.
		sink = sink[:0]
		for i := range msgs {
			sink = appendOne(sink, msgs[i])
		}
		return nil
	})
	for _, c := range []struct {
		name string
		opts agent.HistoryOptions
	}{
		{"history add at 100k msgs, pruned to 1,000", agent.HistoryOptions{MaxLength: 1000, KeepSystem: true}},
		{"history add at 100k msgs, pruned to 8k tokens", agent.HistoryOptions{Strategy: agent.PruneTokenBudget, TokenBudget: 8000, KeepSystem: true}},
	} {
		ours, err := best(func() error {
			h, err := agent.NewHistory(c.opts)
			if err != nil {
				return err
			}
			h.Add(agent.Message{Role: agent.RoleSystem, Text: "You are a coding agent."})
			for _, m := range msgs {
				if _, err := h.Add(m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		// Nanoseconds: report rounds to a tenth of a microsecond.
		fmt.Printf("%-44s %8dns   %-34s %8dns   ratio %.1f×   (target report)\n",
			c.name, ours.Nanoseconds(), "vs append to a slice, per message", floor.Nanoseconds(), float64(ours)/float64(max(floor, 1)))
	}
	if err := benchAgentLoop(); err != nil {
		return err
	}
	if err := benchSubagent(); err != nil {
		return err
	}
	return benchTTFT()
}

// appendOne appends one message: the floor of adding a message to a list.
//
//go:noinline
func appendOne(s []agent.Message, m agent.Message) []agent.Message { return append(s, m) }
