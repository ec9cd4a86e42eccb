package acp

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// Prompt runs one turn of the session: its updates stream as
// session/update notifications, the policy's questions go to the client
// as session/request_permission when the client is the person's (an app's
// client is asked nothing: the editor is, see policy.MayAnswer), and the
// answer is the turn's stop reason.
func (c *conn) Prompt(ctx context.Context, req acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	s, err := c.get(req.SessionId)
	if err != nil {
		return acpsdk.PromptResponse{}, err
	}
	profile, err := c.opts.Agent.SessionProfile(c.opts.Party, s.id)
	if err != nil {
		return acpsdk.PromptResponse{}, requestError(err)
	}
	text, images, err := c.promptContent(req.Prompt, profile.TakesImages())
	if err != nil {
		return acpsdk.PromptResponse{}, err
	}
	if strings.TrimSpace(text) == "" && len(images) == 0 {
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
	opts := agent.PromptOptions{
		OnUpdate: func(u agent.Update) {
			for _, au := range m.convert(u) {
				c.update(send, s.id, au)
			}
		},
		Images: images,
	}
	if policy.MayAnswer(c.opts.Party) == nil {
		opts.Ask = c.asker(s, m) // the person's own ACP editor; an app's client answers nothing
	}
	res, err := c.opts.Agent.Prompt(ctx, c.opts.Party, s.id, text, opts)
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

// promptContent is what the model gets for the prompt's blocks: text as
// it is, a resource link as a mention of the file (workspace-relative when
// it is in the workspace), an embedded text resource with its URI, and
// images (image blocks, and embedded image resources) beside the text.
// An embedded image is context, as an embedded binary is: when the
// session's model takes no images (takesImages false) it is named and not
// sent, where an image block is refused by the agent core
// (agent.PromptError). Audio is refused: no adapter sends it.
func (c *conn) promptContent(blocks []acpsdk.ContentBlock, takesImages bool) (string, []llm.Image, error) {
	var b strings.Builder
	var images []llm.Image
	size := 0
	sep := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
	}
	addImage := func(i int, mimeType, data string) error {
		img, err := decodeImage(mimeType, data)
		if err != nil {
			return invalidParams("prompt block %d: %v", i, err)
		}
		if len(images) == maxImages {
			return invalidParams("prompt block %d: more than %d images in one prompt", i, maxImages)
		}
		if size += len(img.Data); size > maxImagesSize {
			return invalidParams("prompt block %d: the prompt's images come to more than %d MiB", i, maxImagesSize>>20)
		}
		images = append(images, img)
		return nil
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
			blob := r.BlobResourceContents
			image := blob != nil && blob.MimeType != nil && imageTypes[*blob.MimeType]
			switch {
			case r.TextResourceContents != nil:
				fmt.Fprintf(&b, "<context ref=%q>\n%s\n</context>\n", c.mention(r.TextResourceContents.Uri), r.TextResourceContents.Text)
			case image && !takesImages:
				fmt.Fprintf(&b, "[image %s, not shown: the model takes no images]\n", c.mention(blob.Uri))
			case image:
				fmt.Fprintf(&b, "[image %s, attached]\n", c.mention(blob.Uri))
				if err := addImage(i, *blob.MimeType, blob.Blob); err != nil {
					return "", nil, err
				}
			case blob != nil:
				fmt.Fprintf(&b, "[binary content of %s, not shown to the model]\n", c.mention(blob.Uri))
			}
		case blk.Image != nil:
			if err := addImage(i, blk.Image.MimeType, blk.Image.Data); err != nil {
				return "", nil, err
			}
		case blk.Audio != nil:
			return "", nil, invalidParams("prompt block %d is audio: this agent sends no audio to its model (promptCapabilities.audio is false)", i)
		default:
			return "", nil, invalidParams("prompt block %d has no content", i)
		}
	}
	return b.String(), images, nil
}

// Limits of a prompt's images: the most the hosted providers take in one
// request (Anthropic: 5 MB an image). In all, an ACP line (maxLine, 10 MiB
// of JSON, so about 7.5 MiB of images once base64 is decoded) is reached
// before maxImagesSize.
const (
	maxImages     = 20
	maxImageSize  = 5 << 20
	maxImagesSize = 8 << 20
)

// imageTypes are the image types every adapter's provider takes.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// decodeImage is an image block's base64 data, checked: a type the
// providers take, data that decodes, and bytes that are an image of that
// type.
func decodeImage(mimeType, data string) (llm.Image, error) {
	if !imageTypes[mimeType] {
		return llm.Image{}, fmt.Errorf("image type %q is not one of image/png, image/jpeg, image/gif, image/webp", mimeType)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return llm.Image{}, fmt.Errorf("the %s image's data is not base64: %v", mimeType, err)
	}
	if len(raw) > maxImageSize {
		return llm.Image{}, fmt.Errorf("the %s image is %d bytes, more than the %d MiB a model takes", mimeType, len(raw), maxImageSize>>20)
	}
	if sniffed := http.DetectContentType(raw); sniffed != mimeType {
		return llm.Image{}, fmt.Errorf("the data of the image said to be %s is %s", mimeType, sniffed)
	}
	return llm.Image{MIMEType: mimeType, Data: raw}, nil
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
// the client's permission prompt, with the ICERC record and the diff of a
// write in the tool call's content: the change Nexus computed from the
// file (proposedDiffs), else the arguments' (mapper.diff). It answers for the connection's
// party: the policy asks it only when that is the person.
func (c *conn) asker(s *session, m *mapper) policy.Approver {
	return policy.Approver{Who: c.opts.Party, Ask: func(ctx context.Context, call tools.Call, record tools.ICERC) (policy.Answer, error) {
		status := acpsdk.ToolCallStatusPending
		kind := acpsdk.ToolKind(kindOf(call.Kind))
		title := call.Title
		if title == "" {
			title = call.ToolName
		}
		content := []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(icercText(record)))}
		if ds := proposedDiffs(m, record.Changes); len(ds) > 0 {
			content = append(content, ds...)
		} else if d, ok := m.diff(toolName(call), call.ArgumentsJSON); ok {
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
	}}
}

// proposedDiffs is the change a call would make as Nexus computed it
// (ICERC.Changes: the whole file now and after the call), as ACP diffs;
// none for a change without text to show (binary, too large).
func proposedDiffs(m *mapper, changes []tools.ProposedChange) []acpsdk.ToolCallContent {
	var out []acpsdk.ToolCallContent
	for _, c := range changes {
		switch {
		case c.After == nil:
		case c.Before != nil:
			out = append(out, acpsdk.ToolDiffContent(m.abs(c.Path), *c.After, *c.Before))
		default:
			out = append(out, acpsdk.ToolDiffContent(m.abs(c.Path), *c.After))
		}
	}
	return out
}

// icercText is the ICERC record as the person reads it: policy.PromptLines
// (who asks, the model's words labelled as such, Nexus's command, the
// risk, what "always" remembers), every field inert, in a fenced code
// block: ACP clients render text as Markdown, and in a code block the
// model's words are plain text (no link, no emphasis), which no run of
// backticks in them can end.
func icercText(r tools.ICERC) string {
	text := strings.Join(policy.PromptLines(r, "the model's"), "\n")
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + "text\n" + text + "\n" + fence
}

// toolName is the name of a call's tool as agent.Update.ToolName has it.
func toolName(c tools.Call) string {
	if c.ServerName != "" {
		return c.ServerName + "/" + c.ToolName
	}
	return c.ToolName
}
