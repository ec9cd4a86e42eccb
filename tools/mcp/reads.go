package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// Reads of resources and prompts are reads by the caller, decided like the
// server's tools: every door reads through [Hub.As], the hub as one party
// sees it. Each resources/read is a tool call of SERVER/mcp_resource and
// each prompts/get one of SERVER/mcp_prompt (policy.ResourceTool,
// policy.PromptTool), made by the party through the [tools.Manager]:
// decided by the policy (low risk: allowed unless the app's lists or
// tools.policy say otherwise), audited, and shown in the activity stream
// like any call. What the policy would refuse outright is not shown
// either: the lists leave out the resources, templates and prompts of a
// server whose reads the party is denied, and subscribing to a resource or
// completing an argument of a prompt or template needs the same grant as
// reading it.

// Reader is the hub as one party sees it; see [Hub.As].
type Reader struct {
	h     *Hub
	party access.Party
}

// As returns the hub as party sees it: its reads are party's calls.
func (h *Hub) As(party access.Party) Reader { return Reader{h: h, party: party} }

// Readable reports whether the party may read what server holds of tool
// (policy.ResourceTool: its resources; policy.PromptTool: its prompts):
// nil, unless the policy refuses such a read outright.
func (r Reader) Readable(ctx context.Context, server, tool string) error {
	if r.h.opts.Tools == nil {
		return tools.Errorf(tools.CodePermissionDenied, "no tool manager decides who may read MCP server %q", server)
	}
	return r.h.opts.Tools.Permitted(ctx, r.party, policy.ReadDefinition(server, tool))
}

// ReadResource reads a resource of a server as a call of
// SERVER/mcp_resource. The result is the JSON array of its contents;
// binary contents are written to the blob directory and referred to by
// path. A refusal is a *tools.Error with code permission_denied.
func (r Reader) ReadResource(ctx context.Context, name, uri string) (json.RawMessage, error) {
	return r.read(ctx, name, policy.ResourceTool, policy.ResourceArgs{URI: uri},
		fmt.Sprintf("read the resource %s of MCP server %q", uri, name),
		"the resource's contents go back to the caller; nothing is changed",
		func(ctx context.Context, session *mcp.ClientSession) (json.RawMessage, error) {
			return r.h.readResource(ctx, session, name, uri)
		})
}

// GetPrompt renders a prompt of a server as a call of SERVER/mcp_prompt;
// the result is the JSON of {description, messages}. A refusal is a
// *tools.Error with code permission_denied.
func (r Reader) GetPrompt(ctx context.Context, name, prompt string, args map[string]string) (json.RawMessage, error) {
	return r.read(ctx, name, policy.PromptTool, policy.PromptArgs{Name: prompt, Arguments: args},
		fmt.Sprintf("get the prompt %q of MCP server %q", prompt, name),
		"the prompt's messages go back to the caller; nothing is changed",
		func(ctx context.Context, session *mcp.ClientSession) (json.RawMessage, error) {
			res, err := session.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt, Arguments: args})
			if err != nil {
				return nil, fmt.Errorf("MCP server %q: prompt %q: %w", name, prompt, err)
			}
			return json.Marshal(res)
		})
}

// read makes one read of server name a call of tool by the party; fn reads
// on the server's live session once the policy allowed it.
func (r Reader) read(ctx context.Context, name, tool string, args any, intent, outcome string,
	fn func(context.Context, *mcp.ClientSession) (json.RawMessage, error)) (json.RawMessage, error) {
	h := r.h
	s, err := h.server(name)
	if err != nil {
		return nil, err
	}
	if h.opts.Tools == nil {
		return nil, tools.Errorf(tools.CodePermissionDenied, "no tool manager decides who may read MCP server %q", name)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	what := "whose resource to read"
	if tool == policy.PromptTool {
		what = "whose prompt to get"
	}
	call := h.opts.Tools.Execute(ctx, tools.ExecuteRequest{
		Tool: &tools.Tool{Definition: policy.ReadDefinition(name, tool), Timeout: s.callTimeout(),
			Handler: func(ctx context.Context, _ *tools.Invocation, _ json.RawMessage) (json.RawMessage, error) {
				session, err := h.readySession(name, what)
				if err != nil {
					return nil, tools.Errorf(tools.CodeServerUnavailable, "%v", err)
				}
				return fn(ctx, session)
			}},
		Arguments: raw, Party: r.party, Intent: intent, ExpectedOutcome: outcome,
	})
	if call.Error != nil {
		return nil, &tools.Error{Code: call.Error.Code, Message: call.Error.Message}
	}
	return call.ResultJSON, nil
}

// Resources lists the resources of a server, or of every ready server when
// name is "", that the party may read.
func (r Reader) Resources(ctx context.Context, name string) ([]Resource, error) {
	return readable(ctx, r, name, policy.ResourceTool, r.h.Resources, func(x Resource) string { return x.Server })
}

// ResourceTemplates lists the resource templates of a server, or of every
// ready server when name is "", that the party may read.
func (r Reader) ResourceTemplates(ctx context.Context, name string) ([]ResourceTemplate, error) {
	return readable(ctx, r, name, policy.ResourceTool, r.h.ResourceTemplates, func(x ResourceTemplate) string { return x.Server })
}

// Prompts lists the prompts of a server, or of every ready server when
// name is "", that the party may get.
func (r Reader) Prompts(ctx context.Context, name string) ([]Prompt, error) {
	return readable(ctx, r, name, policy.PromptTool, r.h.Prompts, func(x Prompt) string { return x.Server })
}

// readable lists with list what the party may read: the list of one named
// server it may not read is refused, saying why, before the server is
// asked; of every server, the items of those it may not read are left out.
func readable[T any](ctx context.Context, r Reader, name, tool string, list func(context.Context, string) ([]T, error),
	server func(T) string) ([]T, error) {
	if name != "" {
		if _, err := r.h.server(name); err != nil {
			return nil, err
		}
		if err := r.Readable(ctx, name, tool); err != nil {
			return nil, err
		}
	}
	items, err := list(ctx, name)
	if err != nil || name != "" {
		return items, err
	}
	denied := map[string]bool{}
	out := items[:0]
	for _, it := range items {
		s := server(it)
		d, known := denied[s]
		if !known {
			d = r.Readable(ctx, s, tool) != nil
			denied[s] = d
		}
		if !d {
			out = append(out, it)
		}
	}
	return out, nil
}

// Subscribe subscribes the party to a resource of a server (see
// [Hub.Subscribe]): it needs the grant to read it.
func (r Reader) Subscribe(ctx context.Context, name, uri string) (release func(), err error) {
	if _, err := r.h.server(name); err != nil {
		return nil, err
	}
	if err := r.Readable(ctx, name, policy.ResourceTool); err != nil {
		return nil, err
	}
	return r.h.Subscribe(ctx, name, uri)
}

// Complete asks a server for completions of an argument of one of its
// prompts or resource templates (see [Hub.Complete]): it needs the grant
// to get the prompt, or read the resource.
func (r Reader) Complete(ctx context.Context, name string, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	tool := policy.PromptTool
	if params != nil && params.Ref != nil && params.Ref.Type == "ref/resource" {
		tool = policy.ResourceTool
	}
	if _, err := r.h.server(name); err != nil {
		return nil, err
	}
	if err := r.Readable(ctx, name, tool); err != nil {
		return nil, err
	}
	return r.h.Complete(ctx, name, params)
}

// IsDenied reports whether err is a refusal of the policy: a *tools.Error
// with code permission_denied.
func IsDenied(err error) bool {
	var te *tools.Error
	return errors.As(err, &te) && te.Code == tools.CodePermissionDenied
}
