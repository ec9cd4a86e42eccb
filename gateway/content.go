package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// The hub keeps images, audio and binary resources of results as files
// under its blob directory and refers to them by path ({mimeType, bytes,
// blob}); an MCP client gets them back inline, as the server sent them.

// readBlob reads a blob the hub wrote: a path relative to the workspace
// (or absolute), which must be in the blob directory.
func (g *Gateway) readBlob(p string) ([]byte, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(g.opts.Workspace, p)
	}
	dir := g.blobDir()
	if rel, err := filepath.Rel(dir, filepath.Clean(p)); err != nil || rel == "." || strings.HasPrefix(rel, "..") || strings.ContainsRune(rel, filepath.Separator) {
		return nil, fmt.Errorf("blob %s is not in %s", p, dir)
	}
	return os.ReadFile(p)
}

func (g *Gateway) blobDir() string {
	if g.opts.BlobDir != "" {
		return filepath.Clean(g.opts.BlobDir)
	}
	return filepath.Join(g.opts.Workspace, ".nexus", "mcp", "blobs")
}

// inline replaces an item's {bytes, blob} by the data it refers to, under
// key ("data" for images and audio, "blob" for resources).
func (g *Gateway) inline(item map[string]any, key string) error {
	p, ok := item["blob"].(string)
	if !ok {
		return nil
	}
	if _, ok := item["bytes"]; !ok {
		return nil // a resource's own base64 blob, not a path
	}
	data, err := g.readBlob(p)
	if err != nil {
		return err
	}
	delete(item, "blob")
	delete(item, "bytes")
	item[key] = data // encoded as base64
	return nil
}

// hubResult turns a hub tool's resultJson back into the server's result.
func (g *Gateway) hubResult(raw json.RawMessage) (*sdk.CallToolResult, error) {
	var wire struct {
		Content           []map[string]any `json:"content"`
		StructuredContent any              `json:"structuredContent,omitempty"`
		IsError           bool             `json:"isError,omitempty"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, err
	}
	if wire.Content == nil {
		return nil, errors.New("no content")
	}
	for _, item := range wire.Content {
		switch item["type"] {
		case "image", "audio":
			if err := g.inline(item, "data"); err != nil {
				return nil, err
			}
		case "resource":
			if r, ok := item["resource"].(map[string]any); ok {
				if err := g.inline(r, "blob"); err != nil {
					return nil, err
				}
			}
		}
	}
	data, err := json.Marshal(wire)
	if err != nil {
		return nil, err
	}
	var res sdk.CallToolResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// resourceContents turns the hub's ReadResource JSON into MCP contents.
func (g *Gateway) resourceContents(raw json.RawMessage) ([]*sdk.ResourceContents, error) {
	var items []map[string]any
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	var out []*sdk.ResourceContents
	for _, item := range items {
		c := &sdk.ResourceContents{}
		c.URI, _ = item["uri"].(string)
		c.MIMEType, _ = item["mimeType"].(string)
		if p, ok := item["blob"].(string); ok {
			data, err := g.readBlob(p)
			if err != nil {
				return nil, err
			}
			c.Blob = data
		} else {
			c.Text, _ = item["text"].(string)
		}
		out = append(out, c)
	}
	return out, nil
}

// resourceEntry is an exposed resource or template and the server it is
// read from.
type resourceEntry struct {
	server   string
	resource *sdk.Resource
	template *sdk.ResourceTemplate
}

// resourcesOf lists the resources and templates of the ready servers, by
// URI and URI template. A URI two servers both have is read from the first.
func (g *Gateway) resourcesOf(ctx context.Context, ready []string) (map[string]resourceEntry, map[string]resourceEntry) {
	resources, templates := map[string]resourceEntry{}, map[string]resourceEntry{}
	for _, name := range ready {
		rs, err := g.opts.Hub.Resources(ctx, name)
		if err != nil {
			g.logger.Debug("MCP gateway: listing resources", "server", name, "error", err.Error())
		}
		for _, r := range rs {
			if _, dup := resources[r.URI]; !dup && r.URI != "" {
				resources[r.URI] = resourceEntry{server: name, resource: &sdk.Resource{URI: r.URI, Name: r.Name, Title: r.Title,
					Description: r.Description, MIMEType: r.MIMEType}}
			}
		}
		ts, err := g.opts.Hub.ResourceTemplates(ctx, name)
		if err != nil && !errors.Is(err, mcp.ErrNotSupported) {
			g.logger.Debug("MCP gateway: listing resource templates", "server", name, "error", err.Error())
		}
		for _, t := range ts {
			if _, dup := templates[t.URITemplate]; !dup && t.URITemplate != "" {
				templates[t.URITemplate] = resourceEntry{server: name, template: &sdk.ResourceTemplate{URITemplate: t.URITemplate,
					Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType}}
			}
		}
	}
	return resources, templates
}

func entryHash(e resourceEntry) string {
	b, _ := json.Marshal([]any{e.server, e.resource, e.template})
	return string(b)
}

// resourceHandler reads a resource of server as ps's party: a call of
// SERVER/mcp_resource, decided and audited (see [mcp.Reader]).
func (g *Gateway) resourceHandler(ps *partyServer, server string) sdk.ResourceHandler {
	return func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		if err := g.sessionOwned(server); err != nil {
			return nil, err
		}
		raw, err := g.opts.Hub.As(ps.party).ReadResource(ctx, server, req.Params.URI)
		if err != nil {
			return nil, err
		}
		contents, err := g.resourceContents(raw)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", req.Params.URI, err)
		}
		return &sdk.ReadResourceResult{Contents: contents}, nil
	}
}

// updateResourcesLocked brings every server's resources to the new lists.
func (g *Gateway) updateResourcesLocked(resources, templates map[string]resourceEntry) {
	var goneR, goneT []string
	for uri := range g.resources {
		if _, ok := resources[uri]; !ok {
			goneR = append(goneR, uri)
		}
	}
	for uri := range g.templates {
		if _, ok := templates[uri]; !ok {
			goneT = append(goneT, uri)
		}
	}
	newR, newT := map[string]string{}, map[string]string{}
	for _, ps := range g.servers {
		if len(goneR) > 0 {
			ps.server.RemoveResources(goneR...)
		}
		if len(goneT) > 0 {
			ps.server.RemoveResourceTemplates(goneT...)
		}
	}
	for _, uri := range sortedKeys(resources) {
		e := resources[uri]
		h := entryHash(e)
		newR[uri] = h
		if g.resources[uri] != h {
			for _, ps := range g.servers {
				ps.server.AddResource(e.resource, g.resourceHandler(ps, e.server))
			}
		}
	}
	for _, uri := range sortedKeys(templates) {
		e := templates[uri]
		h := entryHash(e)
		newT[uri] = h
		if g.templates[uri] != h {
			for _, ps := range g.servers {
				ps.server.AddResourceTemplate(e.template, g.resourceHandler(ps, e.server))
			}
		}
	}
	g.resources, g.templates = newR, newT
	g.resourceEntries, g.templateEntries = resources, templates
}

// addResourcesLocked gives a new party's server the current resources.
func (g *Gateway) addResourcesLocked(ps *partyServer) {
	for _, e := range g.resourceEntries {
		ps.server.AddResource(e.resource, g.resourceHandler(ps, e.server))
	}
	for _, e := range g.templateEntries {
		ps.server.AddResourceTemplate(e.template, g.resourceHandler(ps, e.server))
	}
}

// promptsOf lists the prompts of the ready servers under their exposed
// names.
func (g *Gateway) promptsOf(ctx context.Context, ready []string, unprefixed map[string]bool) map[string]promptRef {
	var all []mcp.Prompt
	for _, name := range ready {
		ps, err := g.opts.Hub.Prompts(ctx, name)
		if err != nil {
			g.logger.Debug("MCP gateway: listing prompts", "server", name, "error", err.Error())
		}
		all = append(all, ps...)
	}
	out := map[string]promptRef{}
	for pass := 0; pass < 2; pass++ {
		for _, p := range all {
			if unprefixed[p.Server] != (pass == 1) {
				continue
			}
			name := p.Server + g.opts.Separator + p.Name
			if pass == 1 {
				if _, taken := out[p.Name]; !taken {
					name = p.Name
				}
			}
			if _, taken := out[name]; taken || !validName.MatchString(name) {
				g.logger.Warn("MCP gateway: a prompt is left out: its name is taken or not one MCP clients accept", "server", p.Server, "prompt", p.Name, "name", name)
				continue
			}
			out[name] = promptRef{server: p.Server, name: p.Name, prompt: p}
		}
	}
	return out
}

func sdkPrompt(name string, p mcp.Prompt) *sdk.Prompt {
	out := &sdk.Prompt{Name: name, Title: p.Title, Description: p.Description}
	json.Unmarshal(p.Arguments, &out.Arguments)
	return out
}

// promptHandler gets a prompt as ps's party: a call of
// SERVER/mcp_prompt, decided and audited (see [mcp.Reader]).
func (g *Gateway) promptHandler(ps *partyServer, ref promptRef) sdk.PromptHandler {
	return func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		if err := g.sessionOwned(ref.server); err != nil {
			return nil, err
		}
		raw, err := g.opts.Hub.As(ps.party).GetPrompt(ctx, ref.server, ref.name, req.Params.Arguments)
		if err != nil {
			return nil, err
		}
		var res sdk.GetPromptResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("prompt %s/%s: %w", ref.server, ref.name, err)
		}
		return &res, nil
	}
}

// updatePromptsLocked brings every server's prompts to the new list.
func (g *Gateway) updatePromptsLocked(prompts map[string]promptRef) {
	var gone []string
	for name := range g.promptRefs {
		if _, ok := prompts[name]; !ok {
			gone = append(gone, name)
		}
	}
	defs := map[string]string{}
	for _, ps := range g.servers {
		if len(gone) > 0 {
			ps.server.RemovePrompts(gone...)
		}
	}
	for _, name := range sortedKeys(prompts) {
		ref := prompts[name]
		b, _ := json.Marshal([]any{ref.server, ref.prompt})
		defs[name] = string(b)
		if g.promptDefs[name] != defs[name] {
			for _, ps := range g.servers {
				ps.server.AddPrompt(sdkPrompt(name, ref.prompt), g.promptHandler(ps, ref))
			}
		}
	}
	g.promptRefs, g.promptDefs = prompts, defs
}

// hideUnreadable is the middleware of party's server that leaves out of
// resources/list, resources/templates/list and prompts/list what the
// policy denies party to read: every party's server has every resource
// and prompt, so that a read of one it may not read reaches the hub, which
// refuses it, saying why, and audits the refusal (see [mcp.Reader]).
func (g *Gateway) hideUnreadable(party access.Party) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			reader := g.opts.Hub.As(party)
			denied := map[string]bool{}
			hidden := func(server, tool string) bool {
				key := server + "\x00" + tool
				d, known := denied[key]
				if !known {
					d = server != "" && reader.Readable(ctx, server, tool) != nil
					denied[key] = d
				}
				return d
			}
			switch res := res.(type) {
			case *sdk.ListResourcesResult:
				res.Resources = slices.DeleteFunc(res.Resources, func(r *sdk.Resource) bool {
					return hidden(g.resourceServer(r.URI, false), policy.ResourceTool)
				})
			case *sdk.ListResourceTemplatesResult:
				res.ResourceTemplates = slices.DeleteFunc(res.ResourceTemplates, func(t *sdk.ResourceTemplate) bool {
					return hidden(g.resourceServer(t.URITemplate, true), policy.ResourceTool)
				})
			case *sdk.ListPromptsResult:
				res.Prompts = slices.DeleteFunc(res.Prompts, func(p *sdk.Prompt) bool {
					g.mu.Lock()
					server := g.promptRefs[p.Name].server
					g.mu.Unlock()
					return hidden(server, policy.PromptTool)
				})
			}
			return res, nil
		}
	}
}

// resourceServer is the server a resource URI (or a URI template) is read
// from.
func (g *Gateway) resourceServer(uri string, template bool) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if template {
		return g.templateEntries[uri].server
	}
	return g.resourceEntries[uri].server
}
