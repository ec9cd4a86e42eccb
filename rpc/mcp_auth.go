package rpc

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools/mcp"
)

// Signing in to the McpHub's http servers (OAuth).

func mcpOAuth(o *mcp.LaunchOAuth) *nexusv1.McpOAuth {
	if o == nil {
		return nil
	}
	out := &nexusv1.McpOAuth{Grant: o.Grant, ClientId: o.ClientID, ClientSecretEnv: o.ClientSecretEnv, PrivateKeyEnv: o.PrivateKeyEnv,
		SigningAlgorithm: o.SigningAlgorithm, Scopes: o.Scopes, ClientMetadataUrl: o.ClientMetadataURL, RedirectPort: int32(o.RedirectPort)}
	if p := o.IdP; p != nil {
		out.Idp = &nexusv1.McpIdP{Issuer: p.Issuer, TokenEndpoint: p.TokenEndpoint, ClientId: p.ClientID,
			ClientSecretEnv: p.ClientSecretEnv, IdTokenEnv: p.IDTokenEnv, IdTokenCommand: p.IDTokenCommand}
	}
	return out
}

// LoginMcpServer streams the authorization URL, then done; the sign-in
// ends with the stream.
func (s *toolService) LoginMcpServer(req *nexusv1.LoginMcpServerRequest, stream nexusv1.ToolManager_LoginMcpServerServer) error {
	ctx := stream.Context()
	if !identityFrom(ctx).Admin {
		return status.Error(codes.PermissionDenied, "only the admin token (the person) may sign in to MCP servers")
	}
	h, err := s.hub()
	if err != nil {
		return err
	}
	if req.GetName() == "" {
		return status.Error(codes.InvalidArgument, "name is required: the MCP server to sign in to")
	}
	var sendErr error
	st, err := h.Login(ctx, req.GetName(), func(u string) {
		sendErr = stream.Send(&nexusv1.LoginMcpServerEvent{Event: &nexusv1.LoginMcpServerEvent_AuthorizationUrl{AuthorizationUrl: u}})
	})
	switch {
	case sendErr != nil:
		return sendErr
	case err != nil && ctx.Err() != nil && !errors.Is(err, mcp.ErrUnknownServer):
		return status.FromContextError(ctx.Err()).Err()
	case err != nil:
		return mcpError(err)
	}
	return stream.Send(&nexusv1.LoginMcpServerEvent{Event: &nexusv1.LoginMcpServerEvent_Done{
		Done: &nexusv1.LoginMcpServerDone{Server: mcpServer(st, true)}}})
}

func (s *toolService) LogoutMcpServer(ctx context.Context, req *nexusv1.LogoutMcpServerRequest) (*nexusv1.LogoutMcpServerResponse, error) {
	if !identityFrom(ctx).Admin {
		return nil, status.Error(codes.PermissionDenied, "only the admin token (the person) may sign out of MCP servers")
	}
	h, err := s.hub()
	if err != nil {
		return nil, err
	}
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required: the MCP server to sign out of")
	}
	st, removed, err := h.Logout(req.GetName())
	if err != nil {
		return nil, mcpError(err)
	}
	return &nexusv1.LogoutMcpServerResponse{Server: mcpServer(st, true), SignedOut: removed}, nil
}
