package acp

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// Prompt runs one turn of the session: its updates stream as
// session/update notifications, the policy's questions go to the client
// as session/request_permission, and the answer is the turn's stop reason.
func (c *conn) Prompt(ctx context.Context, req acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	s, err := c.get(req.SessionId)
	if err != nil {
		return acpsdk.PromptResponse{}, err
	}
	text, err := c.promptText(req.Prompt)
	if err != nil {
		return acpsdk.PromptResponse{}, err
	}
	if strings.TrimSpace(text) == "" {
		return acpsdk.PromptResponse{}, invalidParams("the prompt has no text")
	}
	c.approveServers(ctx, s)
	// Updates go out even after a cancel: the turn's last ones say how
	// its tool calls ended.
	send := context.WithoutCancel(ctx)
	// The SDK cancels the request's context at session/cancel, before
	// Cancel runs: the turn is stopped through the session instead, so
	// that its calls end "cancelled" by the person, not "the caller went
	// away".
	defer context.AfterFunc(ctx, func() { c.opts.Agent.Cancel(c.opts.Party, s.id) })()
	ctx = policy.WithMode(send, s.currentMode())
	caps := c.clientCaps()
	if caps.Fs.ReadTextFile && caps.Fs.WriteTextFile {
		ctx = tools.WithClientFiles(ctx, clientFiles{c: c, session: s.id})
	}
	if caps.Terminal && c.opts.Config.ACP.Terminal == "client" {
		ctx = tools.WithClientTerminal(ctx, clientTerminal{c: c, session: s.id})
	}
	m := c.mapper(s)
	res, err := c.opts.Agent.Prompt(ctx, c.opts.Party, s.id, text, agent.PromptOptions{
		OnUpdate: func(u agent.Update) {
			for _, au := range m.convert(u) {
				c.update(send, s.id, au)
			}
		},
		Ask: c.asker(s, m),
	})
	if err != nil {
		return acpsdk.PromptResponse{}, requestError(err)
	}
	switch {
	case res.Quit:
		c.update(send, s.id, acpsdk.UpdateAgentMessageText("/quit and /exit end a chat in the terminal; here, close the thread. The session is kept."))
	case res.Resume != "":
		c.update(send, s.id, acpsdk.UpdateAgentMessageText("To go on with session "+res.Resume+", open it from the editor's list of sessions (session/load)."))
	}
	return acpsdk.PromptResponse{StopReason: acpsdk.StopReason(res.StopReason)}, nil
}

// promptText is the text the model gets for the prompt's blocks: text as
// it is, a resource link as a mention of the file (workspace-relative when
// it is in the workspace), an embedded text resource with its URI. Images
// and audio are refused: the agent core sends text.
func (c *conn) promptText(blocks []acpsdk.ContentBlock) (string, error) {
	var b strings.Builder
	sep := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
	}
	for i, blk := range blocks {
		switch {
		case blk.Text != nil:
			b.WriteString(blk.Text.Text)
		case blk.ResourceLink != nil:
			sep()
			fmt.Fprintf(&b, "@%s", c.mention(blk.ResourceLink.Uri))
			if blk.ResourceLink.Name != "" && !strings.HasSuffix(blk.ResourceLink.Uri, blk.ResourceLink.Name) {
				fmt.Fprintf(&b, " (%s)", blk.ResourceLink.Name)
			}
			b.WriteString("\n")
		case blk.Resource != nil:
			sep()
			r := blk.Resource.Resource
			switch {
			case r.TextResourceContents != nil:
				fmt.Fprintf(&b, "<context ref=%q>\n%s\n</context>\n", c.mention(r.TextResourceContents.Uri), r.TextResourceContents.Text)
			case r.BlobResourceContents != nil:
				fmt.Fprintf(&b, "[binary content of %s, not shown to the model]\n", c.mention(r.BlobResourceContents.Uri))
			}
		case blk.Image != nil:
			return "", invalidParams("prompt block %d is an image: this agent sends text to its model (promptCapabilities.image is false)", i)
		case blk.Audio != nil:
			return "", invalidParams("prompt block %d is audio: this agent sends text to its model (promptCapabilities.audio is false)", i)
		default:
			return "", invalidParams("prompt block %d has no content", i)
		}
	}
	return b.String(), nil
}

// mention is how a URI is named to the model: a file of the workspace by
// its relative path, anything else as it is.
func (c *conn) mention(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return uri
	}
	if rel, err := filepath.Rel(c.opts.Workspace, u.Path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return rel
	}
	return u.Path
}

// asker answers the policy's questions about the session's calls through
// the client's permission prompt, with the ICERC record (and the diff of
// an edit) in the tool call's content.
func (c *conn) asker(s *session, m *mapper) policy.Approver {
	return func(ctx context.Context, call tools.Call, record tools.ICERC) (policy.Answer, error) {
		status := acpsdk.ToolCallStatusPending
		kind := acpsdk.ToolKind(kindOf(call.Kind))
		title := call.Title
		if title == "" {
			title = call.ToolName
		}
		content := []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(icercText(record)))}
		if d, ok := m.diff(toolName(call), call.ArgumentsJSON); ok {
			content = append(content, d)
		}
		resp, err := c.peer.RequestPermission(ctx, acpsdk.RequestPermissionRequest{
			SessionId: acpsdk.SessionId(s.id),
			ToolCall: acpsdk.ToolCallUpdate{ToolCallId: acpsdk.ToolCallId(call.ID), Title: &title, Kind: &kind, Status: &status,
				RawInput: rawOrNil(call.ArgumentsJSON), Content: content, Locations: m.locations(call.ArgumentsJSON)},
			Options: []acpsdk.PermissionOption{
				{OptionId: acpsdk.PermissionOptionId(policy.AllowOnce), Name: "Allow once", Kind: acpsdk.PermissionOptionKindAllowOnce},
				{OptionId: acpsdk.PermissionOptionId(policy.AllowAlways), Name: "Always allow", Kind: acpsdk.PermissionOptionKindAllowAlways},
				{OptionId: acpsdk.PermissionOptionId(policy.RejectOnce), Name: "Reject", Kind: acpsdk.PermissionOptionKindRejectOnce},
				{OptionId: acpsdk.PermissionOptionId(policy.RejectAlways), Name: "Always reject", Kind: acpsdk.PermissionOptionKindRejectAlways},
			},
		})
		if err != nil {
			return "", err
		}
		if resp.Outcome.Selected == nil {
			return policy.RejectOnce, nil // the prompt was cancelled
		}
		return policy.Answer(resp.Outcome.Selected.OptionId), nil
	}
}

// icercText is the ICERC record as the person reads it.
func icercText(r tools.ICERC) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Intent: %s\nCommand: %s\nExpected outcome: %s\nRisk: %s", orNone(r.Intent), r.Command, orNone(r.ExpectedOutcome), r.Risk.Level)
	if r.Risk.Scope != "" {
		fmt.Fprintf(&b, " (%s)", r.Risk.Scope)
	}
	for _, d := range r.Risk.Details {
		fmt.Fprintf(&b, "\n  - %s", d)
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(not given)"
	}
	return s
}

// toolName is the name of a call's tool as agent.Update.ToolName has it.
func toolName(c tools.Call) string {
	if c.ServerName != "" {
		return c.ServerName + "/" + c.ToolName
	}
	return c.ToolName
}
