package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/tools"
)

// definition turns an MCP tool into a Nexus tool definition of server.
// Annotations inform the kind and are kept, MCP's defaults filled in (a
// hint left out is destructive and open-world), for the gateway's clients
// and nexus tools ls; the risk is medium for every MCP tool and high for
// one that says it is destructive: a server's annotations never lower it.
func definition(server string, t *mcp.Tool) (tools.Definition, error) {
	in, err := json.Marshal(t.InputSchema)
	if err != nil {
		return tools.Definition{}, fmt.Errorf("input schema: %w", err)
	}
	if string(in) == "null" {
		in = json.RawMessage(`{"type":"object"}`)
	}
	var out json.RawMessage
	if t.OutputSchema != nil {
		if out, err = json.Marshal(t.OutputSchema); err != nil {
			return tools.Definition{}, fmt.Errorf("output schema: %w", err)
		}
	}
	d := tools.Definition{
		Name: t.Name, Title: t.Title, Description: t.Description, ServerName: server,
		InputSchema: in, OutputSchema: out, Kind: tools.KindOther, Risk: tools.RiskMedium,
	}
	if a := t.Annotations; a != nil {
		if d.Title == "" {
			d.Title = a.Title
		}
		d.Annotations = &tools.Annotations{
			ReadOnly:    a.ReadOnlyHint,
			Destructive: a.DestructiveHint == nil || *a.DestructiveHint,
			Idempotent:  a.IdempotentHint,
			OpenWorld:   a.OpenWorldHint == nil || *a.OpenWorldHint,
		}
		switch {
		case a.ReadOnlyHint:
			d.Kind = tools.KindRead
		case a.DestructiveHint != nil && *a.DestructiveHint:
			d.Kind, d.Risk = tools.KindDelete, tools.RiskHigh
		default:
			d.Kind = tools.KindEdit
		}
	}
	return d, nil
}

// touches is the Touches of a server's tool, for its checkpoint: a server
// that runs on this machine (stdio) may change any file of the workspace,
// unless the tool says it only reads (readOnlyHint; a server that lies
// could change files at any time anyway, call or not); a remote (HTTP)
// server cannot reach the workspace's files, so its tools touch nothing.
func touches(transport string, d tools.Definition) func(json.RawMessage) tools.Touch {
	if transport != "stdio" || d.Kind == tools.KindRead {
		return nil
	}
	return func(json.RawMessage) tools.Touch { return tools.Touch{All: true} }
}

// codeRejectedByTransport is the go-sdk's error for a request its
// transport could not deliver or get an answer to (an HTTP request that
// failed): the connection's failure, not the server's answer.
const codeRejectedByTransport = -32005

// handler calls tool on the server's live session.
func (s *server) handler(tool string) tools.Handler {
	return func(ctx context.Context, inv *tools.Invocation, args json.RawMessage) (json.RawMessage, error) {
		session, alive, heard, terr := s.calling()
		if terr != nil {
			return nil, terr
		}
		callCtx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(alive, func() { cancel(errServerGone) })
		defer stop()

		params := &mcp.CallToolParams{Name: tool, Arguments: args}
		if inv != nil {
			var done func()
			callCtx, done = s.hub.inflight.track(s.cfg.Name, inv.CallID, callCtx)
			defer done()
		}
		if inv != nil && inv.CallID != "" {
			params.SetProgressToken(inv.CallID)
			if inv.Progress != nil {
				s.hub.progress.Store(inv.CallID, inv.Progress)
				defer s.hub.progress.Delete(inv.CallID)
			}
		}
		res, err := session.CallTool(callCtx, params)
		// The log messages and progress the server sent before its answer
		// are handled before the call returns (notify.go).
		heard.await(callCtx)
		if err == nil {
			return s.hub.result(s.cfg.Name, tool, res)
		}
		var wire *jsonrpc.Error
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err() // the manager names the timeout or the cancel
		case s.auth.callError(err) != nil:
			return nil, s.auth.callError(err)
		case errors.As(err, &wire) && wire.Code != codeRejectedByTransport:
			return nil, tools.Errorf(tools.CodeExecutionFailed, "MCP server %q: %s (JSON-RPC error %d)", s.cfg.Name, wire.Message, wire.Code)
		}
		// The connection broke: the server is going away, which the
		// supervisor sees a moment later, or it is an error of its own.
		select {
		case <-alive.Done():
			return nil, tools.Errorf(tools.CodeServerUnavailable, "MCP server %q ended during the call (%v); it is being restarted", s.cfg.Name, err)
		case <-time.After(time.Second):
			return nil, tools.Errorf(tools.CodeExecutionFailed, "MCP server %q: %v", s.cfg.Name, err)
		}
	}
}

// result turns a tool result into resultJson: the content (images, audio
// and binary resources written to the blob directory and referred to by
// path), the structured content, and isError. A result over the output
// limit is cut to its first text; an isError result is a tool error with
// the server's message.
func (h *Hub) result(server, tool string, res *mcp.CallToolResult) (json.RawMessage, error) {
	var out struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent any               `json:"structuredContent,omitempty"`
		IsError           bool              `json:"isError,omitempty"`
	}
	out.Content = []json.RawMessage{}
	out.StructuredContent, out.IsError = res.StructuredContent, res.IsError
	var text strings.Builder
	for _, c := range res.Content {
		item, err := h.contentJSON(c)
		if err != nil {
			return nil, tools.Errorf(tools.CodeExecutionFailed, "MCP tool %s/%s: %v", server, tool, err)
		}
		out.Content = append(out.Content, item)
		if t, ok := c.(*mcp.TextContent); ok {
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(t.Text)
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, tools.Errorf(tools.CodeExecutionFailed, "MCP tool %s/%s: encoding the result: %v", server, tool, err)
	}
	if len(data) > h.opts.OutputLimit {
		kept := cutUTF8(text.String(), h.opts.OutputLimit/2)
		cut, _ := json.Marshal(map[string]any{
			"content":       []map[string]string{{"type": "text", "text": kept}},
			"truncated":     true,
			"originalBytes": len(data),
		})
		return nil, &tools.Error{Code: tools.CodeOutputLimit, Output: cut, Message: fmt.Sprintf(
			"the result of %s/%s is %d bytes, over the limit of %d (tools.outputLimit); the first %d bytes of its text are kept",
			server, tool, len(data), h.opts.OutputLimit, len(kept))}
	}
	if res.IsError {
		msg := cutUTF8(text.String(), 2000)
		if msg == "" {
			msg = "no message"
		}
		return nil, &tools.Error{Code: tools.CodeExecutionFailed, Output: data,
			Message: fmt.Sprintf("MCP tool %s/%s reported an error: %s", server, tool, msg)}
	}
	return data, nil
}

// cutUTF8 returns at most n bytes of s, not splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func (h *Hub) contentJSON(c mcp.Content) (json.RawMessage, error) {
	switch c := c.(type) {
	case *mcp.ImageContent:
		return h.blobItem("image", "", c.MIMEType, c.Data)
	case *mcp.AudioContent:
		return h.blobItem("audio", "", c.MIMEType, c.Data)
	case *mcp.EmbeddedResource:
		if r := c.Resource; r != nil && r.Blob != nil {
			res, err := h.blobItem("", r.URI, r.MIMEType, r.Blob)
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"type": "resource", "resource": res})
		}
	}
	return json.Marshal(c)
}

// blobItem writes data to the blob directory, named by its hash, and
// returns the JSON that refers to it: {type, uri, mimeType, bytes, blob},
// without type or uri when they are empty.
func (h *Hub) blobItem(kind, uri, mimeType string, data []byte) (json.RawMessage, error) {
	rel, err := h.writeBlob(mimeType, data)
	if err != nil {
		return nil, err
	}
	item := map[string]any{"mimeType": mimeType, "bytes": len(data), "blob": rel}
	if kind != "" {
		item["type"] = kind
	}
	if uri != "" {
		item["uri"] = uri
	}
	return json.Marshal(item)
}

// writeBlob stores data under BlobDir and returns its path relative to the
// workspace.
func (h *Hub) writeBlob(mimeType string, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	name := hex.EncodeToString(sum[:])
	if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
		name += exts[0]
	}
	p := filepath.Join(h.opts.BlobDir, name)
	if _, err := os.Stat(p); err != nil {
		if err := os.MkdirAll(h.opts.BlobDir, 0o700); err != nil {
			return "", fmt.Errorf("blob directory: %w", err)
		}
		tmp, err := os.CreateTemp(h.opts.BlobDir, ".tmp-*")
		if err != nil {
			return "", fmt.Errorf("writing a blob: %w", err)
		}
		_, err = tmp.Write(data)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), p)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return "", fmt.Errorf("writing a blob: %w", err)
		}
	}
	if rel, err := filepath.Rel(h.opts.Workspace, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel, nil
	}
	return p, nil
}

// Resource is a resource of a server.
type Resource struct {
	Server, URI, Name, Title, Description, MIMEType string
}

// Resources lists the resources of a server, or of every ready server when
// name is "".
func (h *Hub) Resources(ctx context.Context, name string) ([]Resource, error) {
	sessions, err := h.offering(name, func(c *mcp.ServerCapabilities) bool { return c.Resources != nil })
	if err != nil {
		return nil, err
	}
	var out []Resource
	for s, session := range sessions {
		for r, err := range session.Resources(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("MCP server %q: listing resources: %w", s.cfg.Name, err)
			}
			out = append(out, Resource{Server: s.cfg.Name, URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType})
		}
	}
	return out, nil
}

// readySession is the session of the server name, which must be named and
// ready; what names the missing server says what it is for (the server
// "whose resource to read").
func (h *Hub) readySession(name, what string) (*mcp.ClientSession, error) {
	if name == "" {
		return nil, fmt.Errorf("name the server %s", what)
	}
	servers, err := h.ready(name)
	if err != nil {
		return nil, err
	}
	session, _, terr := servers[0].current()
	if terr != nil {
		return nil, errors.New(terr.Message)
	}
	return session, nil
}

// readResource reads a resource on a server's session (see
// [Reader.ReadResource]): the JSON array of its contents, binary contents
// written to the blob directory and referred to by path.
func (h *Hub) readResource(ctx context.Context, session *mcp.ClientSession, name, uri string) (json.RawMessage, error) {
	res, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: reading %s: %w", name, uri, err)
	}
	items := []json.RawMessage{}
	for _, c := range res.Contents {
		if c.Blob != nil {
			item, err := h.blobItem("", c.URI, c.MIMEType, c.Blob)
			if err != nil {
				return nil, err
			}
			items = append(items, item)
			continue
		}
		item, _ := json.Marshal(map[string]string{"uri": c.URI, "mimeType": c.MIMEType, "text": c.Text})
		items = append(items, item)
	}
	return json.Marshal(items)
}

// Prompt is a prompt of a server; Arguments is the JSON array of its
// arguments ({name, description, required}).
type Prompt struct {
	Server, Name, Title, Description string
	Arguments                        json.RawMessage
}

// Prompts lists the prompts of a server, or of every ready server when
// name is "".
func (h *Hub) Prompts(ctx context.Context, name string) ([]Prompt, error) {
	sessions, err := h.offering(name, func(c *mcp.ServerCapabilities) bool { return c.Prompts != nil })
	if err != nil {
		return nil, err
	}
	var out []Prompt
	for s, session := range sessions {
		for p, err := range session.Prompts(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("MCP server %q: listing prompts: %w", s.cfg.Name, err)
			}
			args, _ := json.Marshal(p.Arguments)
			if string(args) == "null" {
				args = json.RawMessage("[]")
			}
			out = append(out, Prompt{Server: s.cfg.Name, Name: p.Name, Title: p.Title, Description: p.Description, Arguments: args})
		}
	}
	return out, nil
}
