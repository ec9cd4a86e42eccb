package server

import (
	"context"
	"time"

	"github.com/nexuscocreate/nexus/tools/mcp"
)

// The MCP servers' resources and prompts: nexus/mcp/resources/... and
// nexus/mcp/prompts/..., with the shapes of ToolManager's McpResource,
// McpResourceTemplate and McpPrompt messages; and what the servers say
// changed, as notifications.
//
// The editor's resource subscriptions are its own: they end when it goes
// (Serve returns), and it hears nexus/mcp/resourceUpdated only for them.
// nexus/mcp/listChanged comes for every server.

// The notifications of MCP servers' changes.
const (
	notifyMCPResourceUpdated = "nexus/mcp/resourceUpdated"
	notifyMCPListChanged     = "nexus/mcp/listChanged"
)

type mcpServerParams struct {
	// ServerName empty: every ready server.
	ServerName string `json:"serverName,omitempty"`
}

type mcpResourceWire struct {
	ServerName  string `json:"serverName"`
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

type mcpResourcesResult struct {
	Resources []mcpResourceWire `json:"resources"`
}

func (s *Server) mcpResourcesList(ctx context.Context, p *mcpServerParams) (*mcpResourcesResult, error) {
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	rs, err := h.As(editor).Resources(ctx, p.ServerName)
	if err != nil {
		return nil, mcpMethodError(ctx, err)
	}
	res := &mcpResourcesResult{Resources: []mcpResourceWire{}}
	for _, r := range rs {
		res.Resources = append(res.Resources, mcpResourceWire{ServerName: r.Server, URI: r.URI, Name: r.Name, Title: r.Title,
			Description: r.Description, MIMEType: r.MIMEType})
	}
	return res, nil
}

type mcpResourceParams struct {
	ServerName string `json:"serverName"`
	URI        string `json:"uri"`
}

func (p *mcpResourceParams) check() error {
	if p.ServerName == "" {
		return missing("serverName", "the MCP server of the resource")
	}
	if p.URI == "" {
		return missing("uri", "the URI of the resource")
	}
	return nil
}

type mcpReadResult struct {
	// ContentsJSON is the JSON array of the contents: {uri, mimeType, text}
	// or {uri, mimeType, bytes, blob} (a file under .nexus/mcp/blobs).
	ContentsJSON string `json:"contentsJson"`
}

func (s *Server) mcpResourcesRead(ctx context.Context, p *mcpResourceParams) (*mcpReadResult, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	data, err := h.As(editor).ReadResource(ctx, p.ServerName, p.URI)
	if err != nil {
		return nil, mcpMethodError(ctx, err)
	}
	return &mcpReadResult{ContentsJSON: string(data)}, nil
}

type mcpResourceTemplateWire struct {
	ServerName  string `json:"serverName"`
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

type mcpTemplatesResult struct {
	Templates []mcpResourceTemplateWire `json:"templates"`
}

func (s *Server) mcpResourcesTemplates(ctx context.Context, p *mcpServerParams) (*mcpTemplatesResult, error) {
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	ts, err := h.As(editor).ResourceTemplates(ctx, p.ServerName)
	if err != nil {
		return nil, mcpMethodError(ctx, err)
	}
	res := &mcpTemplatesResult{Templates: []mcpResourceTemplateWire{}}
	for _, t := range ts {
		res.Templates = append(res.Templates, mcpResourceTemplateWire{ServerName: t.Server, URITemplate: t.URITemplate, Name: t.Name,
			Title: t.Title, Description: t.Description, MIMEType: t.MIMEType})
	}
	return res, nil
}

// mcpSub names a subscription of the editor.
type mcpSub struct{ server, uri string }

// mcpResourcesSubscribe subscribes the editor to a resource; subscribing
// again to the same one changes nothing.
func (s *Server) mcpResourcesSubscribe(ctx context.Context, p *mcpResourceParams) (*emptyResult, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	k := mcpSub{p.ServerName, p.URI}
	// In the table before the server is asked, so that an update it sends
	// at once is not lost; nil until subscribed.
	s.mcpSubsMu.Lock()
	if _, ok := s.mcpSubs[k]; ok {
		s.mcpSubsMu.Unlock()
		return &emptyResult{}, nil
	}
	if s.mcpSubs == nil {
		s.mcpSubs = map[mcpSub]func(){}
	}
	s.mcpSubs[k] = nil
	s.mcpSubsMu.Unlock()
	release, err := h.As(editor).Subscribe(ctx, p.ServerName, p.URI)
	s.mcpSubsMu.Lock()
	defer s.mcpSubsMu.Unlock()
	if err != nil {
		delete(s.mcpSubs, k)
		return nil, mcpMethodError(ctx, err)
	}
	if _, ok := s.mcpSubs[k]; !ok || s.mcpSubsDone {
		release() // unsubscribed, or the editor went, meanwhile
		return &emptyResult{}, nil
	}
	s.mcpSubs[k] = release
	return &emptyResult{}, nil
}

func (s *Server) mcpResourcesUnsubscribe(_ context.Context, p *mcpResourceParams) (*emptyResult, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	s.mcpSubsMu.Lock()
	k := mcpSub{p.ServerName, p.URI}
	release := s.mcpSubs[k]
	delete(s.mcpSubs, k)
	s.mcpSubsMu.Unlock()
	if release != nil {
		release()
	}
	return &emptyResult{}, nil
}

// releaseMcpSubs ends the editor's subscriptions: it is gone.
func (s *Server) releaseMcpSubs() {
	s.mcpSubsMu.Lock()
	subs := s.mcpSubs
	s.mcpSubs, s.mcpSubsDone = nil, true
	s.mcpSubsMu.Unlock()
	for _, release := range subs {
		if release != nil {
			release()
		}
	}
}

// mcpSubscribed reports whether the editor subscribed to the resource an
// update is about. It runs inside the bus's Publish.
func (s *Server) mcpSubscribed(u mcp.ResourceUpdated) bool {
	s.mcpSubsMu.Lock()
	defer s.mcpSubsMu.Unlock()
	for k := range s.mcpSubs {
		if k.server == u.Server && mcp.Covers(k.uri, u.URI) {
			return true
		}
	}
	return false
}

// busEvent passes the bus's events to the outbox, resource updates only
// for the editor's subscriptions.
func (s *Server) busEvent(ev any) {
	if u, ok := ev.(mcp.ResourceUpdated); ok && !s.mcpSubscribed(u) {
		return
	}
	s.out.event(ev)
}

type mcpPromptWire struct {
	ServerName  string `json:"serverName"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// ArgumentsJSON is the JSON array of its arguments: {name,
	// description, required}.
	ArgumentsJSON string `json:"argumentsJson"`
}

type mcpPromptsResult struct {
	Prompts []mcpPromptWire `json:"prompts"`
}

func (s *Server) mcpPromptsList(ctx context.Context, p *mcpServerParams) (*mcpPromptsResult, error) {
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	ps, err := h.As(editor).Prompts(ctx, p.ServerName)
	if err != nil {
		return nil, mcpMethodError(ctx, err)
	}
	res := &mcpPromptsResult{Prompts: []mcpPromptWire{}}
	for _, pr := range ps {
		res.Prompts = append(res.Prompts, mcpPromptWire{ServerName: pr.Server, Name: pr.Name, Title: pr.Title,
			Description: pr.Description, ArgumentsJSON: string(pr.Arguments)})
	}
	return res, nil
}

type mcpPromptGetParams struct {
	ServerName string            `json:"serverName"`
	Name       string            `json:"name"`
	Arguments  map[string]string `json:"arguments,omitempty"`
}

type mcpPromptGetResult struct {
	// ResultJSON is the rendered prompt: {description, messages}.
	ResultJSON string `json:"resultJson"`
}

func (s *Server) mcpPromptsGet(ctx context.Context, p *mcpPromptGetParams) (*mcpPromptGetResult, error) {
	if p.ServerName == "" {
		return nil, missing("serverName", "the MCP server of the prompt")
	}
	if p.Name == "" {
		return nil, missing("name", "the prompt to render")
	}
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	data, err := h.As(editor).GetPrompt(ctx, p.ServerName, p.Name, p.Arguments)
	if err != nil {
		return nil, mcpMethodError(ctx, err)
	}
	return &mcpPromptGetResult{ResultJSON: string(data)}, nil
}

func (s *Server) hub() (*mcp.Hub, error) {
	if s.opts.MCP == nil {
		return nil, coded(CodeUnavailable, "unavailable", "this daemon runs no MCP servers")
	}
	return s.opts.MCP, nil
}

// The notifications.

type mcpResourceUpdatedWire struct {
	Server string    `json:"server"`
	URI    string    `json:"uri"`
	Time   time.Time `json:"time"`
}

type mcpListChangedWire struct {
	Server string `json:"server"`
	// Kind is tools, resources or prompts.
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
}
