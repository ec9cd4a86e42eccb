package acp

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/tools"
)

// mapper turns the agent core's updates (already ACP-shaped, see
// agent.Update) into the SDK's: paths made absolute, as ACP wants them,
// an edit's diff added to its tool call, and Nexus's own kinds mapped or
// left out (permission and elicitation requests reach the client in their
// own ways; command output and retries are shown as text).
type mapper struct {
	ws string

	mu sync.Mutex
	// diffs are the diffs of the edits of the turn, by tool call id, sent
	// again with the call's end (an update replaces the content).
	diffs map[string]acpsdk.ToolCallContent
}

func (c *conn) mapper(s *session) *mapper {
	return &mapper{ws: c.opts.Workspace, diffs: map[string]acpsdk.ToolCallContent{}}
}

// kindOf is a Nexus tool kind in ACP's words; they are the same.
func kindOf(k tools.Kind) string {
	if k == "" {
		return string(tools.KindOther)
	}
	return string(k)
}

func rawOrNil(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// abs is a path of the workspace as an absolute path.
func (m *mapper) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(m.ws, p)
}

// locations are the files a call's arguments name.
func (m *mapper) locations(args json.RawMessage) []acpsdk.ToolCallLocation {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(args, &a) != nil || a.Path == "" {
		return nil
	}
	return []acpsdk.ToolCallLocation{{Path: m.abs(a.Path)}}
}

// diff is the diff an edit's arguments describe: write_file's whole new
// text, edit_file's replaced piece.
func (m *mapper) diff(tool string, args json.RawMessage) (acpsdk.ToolCallContent, bool) {
	var a struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
		OldText *string `json:"oldText"`
		NewText *string `json:"newText"`
	}
	if json.Unmarshal(args, &a) != nil || a.Path == "" {
		return acpsdk.ToolCallContent{}, false
	}
	switch {
	case tool == "write_file" && a.Content != nil:
		return acpsdk.ToolDiffContent(m.abs(a.Path), *a.Content), true
	case tool == "edit_file" && a.OldText != nil && a.NewText != nil:
		return acpsdk.ToolDiffContent(m.abs(a.Path), *a.NewText, *a.OldText), true
	}
	return acpsdk.ToolCallContent{}, false
}

// edits are the diffs of what a completed call changed, as its checkpoint
// has the files before and after it (an added file has no old text): the
// real change, where the arguments' diff knows neither what a write
// replaced nor what a command changed.
func (m *mapper) edits(edits []agent.Edit) []acpsdk.ToolCallContent {
	out := make([]acpsdk.ToolCallContent, 0, len(edits))
	for _, e := range edits {
		after := ""
		if e.After != nil {
			after = *e.After
		}
		if e.Before == nil {
			out = append(out, acpsdk.ToolDiffContent(m.abs(e.Path), after))
		} else {
			out = append(out, acpsdk.ToolDiffContent(m.abs(e.Path), after, *e.Before))
		}
	}
	return out
}

// text is the content block of a chunk: its text, or its image.
func text(c any) (acpsdk.ContentBlock, bool) {
	b, ok := c.(*agent.ContentBlock)
	switch {
	case !ok || b == nil:
		return acpsdk.ContentBlock{}, false
	case b.Type == "image":
		return acpsdk.ImageBlock(b.Data, b.MimeType), true
	}
	return acpsdk.TextBlock(b.Text), true
}

// content is a tool call's content.
func content(c any) []acpsdk.ToolCallContent {
	items, _ := c.([]agent.ToolCallContent)
	var out []acpsdk.ToolCallContent
	for _, it := range items {
		if it.Content != nil {
			out = append(out, acpsdk.ToolContent(acpsdk.TextBlock(it.Content.Text)))
		}
	}
	return out
}

// parentMeta is the _meta of a subagent's tool call: the task call it is
// under (its title names the subagent too, for an editor that reads no
// _meta); nil for any other call.
func parentMeta(u agent.Update) map[string]any {
	if u.ParentToolCallID == "" {
		return nil
	}
	return map[string]any{"nexus": map[string]any{"parentToolCallId": u.ParentToolCallID}}
}

// convert maps one update; it returns none for the kinds ACP has no use
// for.
func (m *mapper) convert(u agent.Update) []acpsdk.SessionUpdate {
	switch u.SessionUpdate {
	case "user_message_chunk":
		if b, ok := text(u.Content); ok {
			return []acpsdk.SessionUpdate{acpsdk.UpdateUserMessage(b)}
		}
	case "agent_message_chunk", "command_output":
		if c := u.Compaction; c != nil {
			return []acpsdk.SessionUpdate{compaction(c)}
		}
		if b, ok := text(u.Content); ok {
			return []acpsdk.SessionUpdate{acpsdk.UpdateAgentMessage(b)}
		}
	case "agent_thought_chunk":
		if b, ok := text(u.Content); ok {
			return []acpsdk.SessionUpdate{acpsdk.UpdateAgentThought(b)}
		}
	case "retry":
		if r := u.Retry; r != nil {
			return []acpsdk.SessionUpdate{acpsdk.UpdateAgentThoughtText(fmt.Sprintf("The model request failed (%s); sending it again in %v (attempt %d).\n",
				r.Error, (time.Duration(r.WaitMs) * time.Millisecond).Round(time.Millisecond), r.Attempt))}
		}
	case "tool_call":
		tc := &acpsdk.SessionUpdateToolCall{SessionUpdate: "tool_call", ToolCallId: acpsdk.ToolCallId(u.ToolCallID), Title: u.Title,
			Kind: acpsdk.ToolKind(u.Kind), Status: acpsdk.ToolCallStatus(u.Status), RawInput: rawOrNil(u.RawInput),
			RawOutput: rawOrNil(u.RawOutput), Locations: m.locations(u.RawInput), Content: content(u.Content), Meta: parentMeta(u)}
		if d, ok := m.diff(u.ToolName, u.RawInput); ok {
			m.mu.Lock()
			m.diffs[u.ToolCallID] = d
			m.mu.Unlock()
			tc.Content = append([]acpsdk.ToolCallContent{d}, tc.Content...)
		}
		return []acpsdk.SessionUpdate{{ToolCall: tc}}
	case "tool_call_update":
		up := &acpsdk.SessionToolCallUpdate{SessionUpdate: "tool_call_update", ToolCallId: acpsdk.ToolCallId(u.ToolCallID),
			RawOutput: rawOrNil(u.RawOutput), Content: content(u.Content), Meta: parentMeta(u)}
		if u.Title != "" {
			title := u.Title
			up.Title = &title
		}
		if u.Status != "" {
			st := acpsdk.ToolCallStatus(u.Status)
			up.Status = &st
		}
		if len(up.Content) > 0 {
			m.mu.Lock()
			d, ok := m.diffs[u.ToolCallID]
			delete(m.diffs, u.ToolCallID)
			m.mu.Unlock()
			if edits := m.edits(u.Edits); len(edits) > 0 {
				up.Content = append(edits, up.Content...)
			} else if ok {
				up.Content = append([]acpsdk.ToolCallContent{d}, up.Content...)
			}
		}
		return []acpsdk.SessionUpdate{{ToolCallUpdate: up}}
	case "plan":
		entries := make([]acpsdk.PlanEntry, 0, len(u.Entries))
		for _, e := range u.Entries {
			entries = append(entries, acpsdk.PlanEntry{Content: e.Content, Priority: acpsdk.PlanEntryPriority(e.Priority), Status: acpsdk.PlanEntryStatus(e.Status)})
		}
		return []acpsdk.SessionUpdate{acpsdk.UpdatePlan(entries...)}
	case "usage_update":
		uu := &acpsdk.SessionUsageUpdate{SessionUpdate: "usage_update", Used: u.Used, Size: u.Size}
		if u.Cost != nil {
			uu.Cost = &acpsdk.Cost{Amount: u.Cost.Amount, Currency: u.Cost.Currency}
		}
		return []acpsdk.SessionUpdate{{UsageUpdate: uu}}
	}
	return nil
}

// compaction shows a compaction as every ACP client renders it: ACP has
// no session/update of its own for one, so it is a paragraph of the
// agent's message, with what it did under _meta.nexus.compaction for a
// client that knows it (Nexus's fields in _meta are all under "nexus").
func compaction(c *agent.Compaction) acpsdk.SessionUpdate {
	u := acpsdk.UpdateAgentMessageText("\n\n" + c.String() + "\n\n")
	u.AgentMessageChunk.Meta = map[string]any{"nexus": map[string]any{"compaction": c}}
	return u
}
