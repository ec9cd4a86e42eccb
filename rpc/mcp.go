package rpc

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
)

// The McpHub RPCs of ToolManager.

func (s *toolService) hub() (*mcp.Hub, error) {
	if s.mcp == nil {
		return nil, status.Error(codes.Unavailable, "this daemon runs no MCP servers")
	}
	return s.mcp, nil
}

// mcpError maps a hub error to a status: an unknown server is NOT_FOUND,
// a read the policy refused PERMISSION_DENIED, one that ran out of time
// DEADLINE_EXCEEDED, a server that is not ready FAILED_PRECONDITION.
func mcpError(err error) error {
	var te *tools.Error
	switch {
	case mcp.IsDenied(err):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.As(err, &te) && te.Code == tools.CodeTimeout:
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.As(err, &te) && te.Code == tools.CodeCancelled:
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, mcp.ErrUnknownServer):
		return status.Error(codes.NotFound, err.Error()+": servers are configured in .nexus/mcp.json, .vscode/mcp.json or .mcp.json")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return status.FromContextError(err).Err()
	}
	return status.Error(codes.FailedPrecondition, err.Error())
}

func (s *toolService) ListMcpServers(ctx context.Context, _ *nexusv1.ListMcpServersRequest) (*nexusv1.ListMcpServersResponse, error) {
	if _, err := s.apps.caller(ctx, ""); err != nil {
		return nil, err
	}
	resp := &nexusv1.ListMcpServersResponse{}
	if s.mcp == nil {
		return resp, nil
	}
	admin := identityFrom(ctx).Admin
	for _, st := range s.mcp.Servers() {
		resp.Servers = append(resp.Servers, mcpServer(st, admin))
	}
	return resp, nil
}

// mcpServer converts a server's status; its launch values and pin go to
// the person only: env and headers may hold secrets.
func mcpServer(st mcp.Status, admin bool) *nexusv1.McpServer {
	out := &nexusv1.McpServer{Name: st.Name, State: st.State, Transport: st.Transport, Source: st.Source,
		ToolCount: int32(st.Tools), Error: st.Error, Restarts: int32(st.Restarts), Since: timestamppb.New(st.Since),
		Lazy: st.Lazy, Pid: int32(st.PID), Trusted: st.Trusted}
	if admin {
		l := st.Launch
		out.Pin = st.Pin
		out.Launch = &nexusv1.McpLaunch{Transport: l.Transport, Command: l.Command, Args: l.Args, Cwd: l.Cwd, Env: l.Env,
			InheritEnv: l.InheritEnv, Url: l.URL, Headers: l.Headers, Oauth: mcpOAuth(l.OAuth)}
	}
	return out
}

func (s *toolService) RestartMcpServer(ctx context.Context, req *nexusv1.RestartMcpServerRequest) (*nexusv1.RestartMcpServerResponse, error) {
	if !identityFrom(ctx).Admin {
		return nil, status.Error(codes.PermissionDenied, "only the admin token may restart MCP servers")
	}
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required: the MCP server to restart")
	}
	if err := h.Restart(req.GetName()); err != nil {
		return nil, mcpError(err)
	}
	return &nexusv1.RestartMcpServerResponse{}, nil
}

func (s *toolService) TrustMcpServer(ctx context.Context, req *nexusv1.TrustMcpServerRequest) (*nexusv1.TrustMcpServerResponse, error) {
	if !identityFrom(ctx).Admin {
		return nil, status.Error(codes.PermissionDenied, "only the admin token (the person) may approve MCP servers")
	}
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required: the MCP server to approve")
	}
	st, err := h.Trust(c.party, req.GetName(), req.GetPin())
	if err != nil {
		return nil, mcpError(err)
	}
	return &nexusv1.TrustMcpServerResponse{Server: mcpServer(st, true)}, nil
}

func (s *toolService) ListMcpResources(ctx context.Context, req *nexusv1.ListMcpResourcesRequest) (*nexusv1.ListMcpResourcesResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	rs, err := h.As(c.party).Resources(ctx, req.GetServerName())
	if err != nil {
		return nil, mcpError(err)
	}
	resp := &nexusv1.ListMcpResourcesResponse{}
	for _, r := range rs {
		resp.Resources = append(resp.Resources, &nexusv1.McpResource{ServerName: r.Server, Uri: r.URI, Name: r.Name,
			Title: r.Title, Description: r.Description, MimeType: r.MIMEType})
	}
	return resp, nil
}

func (s *toolService) ReadMcpResource(ctx context.Context, req *nexusv1.ReadMcpResourceRequest) (*nexusv1.ReadMcpResourceResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	if req.GetServerName() == "" || req.GetUri() == "" {
		return nil, status.Error(codes.InvalidArgument, "serverName and uri are required")
	}
	data, err := h.As(c.party).ReadResource(ctx, req.GetServerName(), req.GetUri())
	if err != nil {
		return nil, mcpError(err)
	}
	return &nexusv1.ReadMcpResourceResponse{ContentsJson: string(data)}, nil
}

func (s *toolService) ListMcpPrompts(ctx context.Context, req *nexusv1.ListMcpPromptsRequest) (*nexusv1.ListMcpPromptsResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	ps, err := h.As(c.party).Prompts(ctx, req.GetServerName())
	if err != nil {
		return nil, mcpError(err)
	}
	resp := &nexusv1.ListMcpPromptsResponse{}
	for _, p := range ps {
		resp.Prompts = append(resp.Prompts, &nexusv1.McpPrompt{ServerName: p.Server, Name: p.Name, Title: p.Title,
			Description: p.Description, ArgumentsJson: string(p.Arguments)})
	}
	return resp, nil
}

func (s *toolService) GetMcpPrompt(ctx context.Context, req *nexusv1.GetMcpPromptRequest) (*nexusv1.GetMcpPromptResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	if req.GetServerName() == "" || req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "serverName and name are required")
	}
	data, err := h.As(c.party).GetPrompt(ctx, req.GetServerName(), req.GetName(), req.GetArguments())
	if err != nil {
		return nil, mcpError(err)
	}
	return &nexusv1.GetMcpPromptResponse{ResultJson: string(data)}, nil
}

func (s *toolService) ListMcpResourceTemplates(ctx context.Context, req *nexusv1.ListMcpResourceTemplatesRequest) (*nexusv1.ListMcpResourceTemplatesResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	ts, err := h.As(c.party).ResourceTemplates(ctx, req.GetServerName())
	if err != nil {
		return nil, mcpError(err)
	}
	resp := &nexusv1.ListMcpResourceTemplatesResponse{}
	for _, t := range ts {
		resp.Templates = append(resp.Templates, &nexusv1.McpResourceTemplate{ServerName: t.Server, UriTemplate: t.URITemplate,
			Name: t.Name, Title: t.Title, Description: t.Description, MimeType: t.MIMEType})
	}
	return resp, nil
}

// WatchMcpChanges is a stream, not Subscribe/Unsubscribe RPCs: the
// subscriptions are the stream's, so they end with it however the client
// goes, and nobody keeps ids of subscriptions whose owner died.
func (s *toolService) WatchMcpChanges(req *nexusv1.WatchMcpChangesRequest, stream nexusv1.ToolManager_WatchMcpChangesServer) error {
	ctx := stream.Context()
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return err
	}
	h, err := s.hub()
	if err != nil {
		return err
	}
	name, uris := req.GetServerName(), req.GetSubscribeUris()
	if len(uris) > 0 && name == "" {
		return status.Error(codes.InvalidArgument, "serverName is required with subscribeUris")
	}
	// On the bus before the subscriptions, so that no update falls between.
	sub := s.bus.Subscribe(func(ev any) bool {
		switch ev := ev.(type) {
		case mcp.ListChanged:
			return name == "" || ev.Server == name
		case mcp.ResourceUpdated:
			if ev.Server != name {
				return false
			}
			for _, u := range uris {
				if mcp.Covers(u, ev.URI) {
					return true
				}
			}
		}
		return false
	}, watchBuffer)
	defer sub.Close()
	for _, uri := range uris {
		release, err := h.As(c.party).Subscribe(ctx, name, uri)
		if err != nil {
			return mcpError(err)
		}
		defer release()
	}
	if err := live(stream); err != nil {
		return err
	}
	return forward(ctx, sub, func(ev any) error {
		var c *nexusv1.McpChange
		switch ev := ev.(type) {
		case mcp.ListChanged:
			c = &nexusv1.McpChange{ServerName: ev.Server, Kind: ev.Kind, Time: timestamppb.New(ev.Time)}
		case mcp.ResourceUpdated:
			c = &nexusv1.McpChange{ServerName: ev.Server, Kind: "resource", Uri: ev.URI, Time: timestamppb.New(ev.Time)}
		}
		return stream.Send(c)
	})
}
