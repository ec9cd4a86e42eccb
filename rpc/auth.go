// Package rpc serves the gRPC API of nexusd: the CoreFramework, ToolManager
// and Agent services, thin adapters from protobuf to the domain packages,
// with per-app identity from bearer tokens. Start with [NewServer].
package rpc

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/access"
)

// Identity is who a request comes from.
type Identity struct {
	// Admin is the person at the terminal (the CLI's admin token).
	Admin bool
	// App is the app id of an app token; empty for the admin.
	App *access.App
}

// Authenticator maps bearer tokens to identities.
type Authenticator struct {
	tokens map[[32]byte]Identity
	apps   map[string]*access.App
}

// NewAuthenticator returns an authenticator for the admin token and one
// token per app.
func NewAuthenticator(adminToken string, apps map[string]*access.App, appTokens map[string]string) *Authenticator {
	a := &Authenticator{tokens: map[[32]byte]Identity{}, apps: apps}
	a.tokens[sha256.Sum256([]byte(adminToken))] = Identity{Admin: true}
	for id, tok := range appTokens {
		a.tokens[sha256.Sum256([]byte(tok))] = Identity{App: apps[id]}
	}
	return a
}

// authenticate finds the identity of the bearer token in ctx. Tokens are
// compared by their SHA-256, so the lookup time does not depend on how much
// of a guess was right.
func (a *Authenticator) authenticate(ctx context.Context) (Identity, error) {
	vals := metadata.ValueFromIncomingContext(ctx, "authorization")
	if len(vals) == 0 {
		return Identity{}, status.Error(codes.Unauthenticated, "missing authorization metadata: send \"authorization: Bearer <token>\"")
	}
	tok, ok := strings.CutPrefix(vals[0], "Bearer ")
	if !ok || tok == "" {
		return Identity{}, status.Error(codes.Unauthenticated, "authorization metadata must be \"Bearer <token>\"")
	}
	sum := sha256.Sum256([]byte(tok))
	for k, id := range a.tokens {
		if subtle.ConstantTimeCompare(k[:], sum[:]) == 1 {
			return id, nil
		}
	}
	return Identity{}, status.Error(codes.Unauthenticated, "unknown token")
}

// Identify finds the identity of a bearer token, for doors other than
// gRPC (the MCP gateway).
func (a *Authenticator) Identify(token string) (Identity, bool) {
	sum := sha256.Sum256([]byte(token))
	for k, id := range a.tokens {
		if subtle.ConstantTimeCompare(k[:], sum[:]) == 1 {
			return id, true
		}
	}
	return Identity{}, false
}

type identityKey struct{}

func identityFrom(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// public reports whether a method needs no token: health checks and
// reflection, so that standard tools work.
func public(fullMethod string) bool {
	return strings.HasPrefix(fullMethod, "/grpc.health.v1.") || strings.HasPrefix(fullMethod, "/grpc.reflection.")
}

func (a *Authenticator) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if public(info.FullMethod) {
		return handler(ctx, req)
	}
	id, err := a.authenticate(ctx)
	if err != nil {
		return nil, err
	}
	return handler(context.WithValue(ctx, identityKey{}, id), req)
}

func (a *Authenticator) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if public(info.FullMethod) {
		return handler(srv, ss)
	}
	id, err := a.authenticate(ss.Context())
	if err != nil {
		return err
	}
	return handler(srv, &identityStream{ss, context.WithValue(ss.Context(), identityKey{}, id)})
}

type identityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *identityStream) Context() context.Context { return s.ctx }
