// Package rpc serves the gRPC API of nexusd: the CoreFramework, ToolManager
// and Agent services, thin adapters from protobuf to the domain packages,
// with per-app identity from bearer tokens. Start with [NewServer].
package rpc

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/workspace"
)

// Identity is who a request comes from.
type Identity struct {
	// Admin is the person at the terminal (the CLI's admin token).
	Admin bool
	// App is the app id of an app token; empty for the admin.
	App *access.App
	// Certificate is set when the app is known by its TLS client
	// certificate (apps[].certificate) rather than by a token alone.
	Certificate bool
}

// Authenticator maps bearer tokens, and verified TLS client certificates,
// to identities.
type Authenticator struct {
	tokens map[[32]byte]Identity
	apps   map[string]*access.App
	// certs maps the SHA-256 fingerprint of a client certificate to its
	// app.
	certs map[[32]byte]*access.App
}

// NewAuthenticator returns an authenticator for the admin token, one token
// per app, and the client certificates of apps (appCerts: app id →
// SHA-256 fingerprint of the certificate; nil for none).
func NewAuthenticator(adminToken string, apps map[string]*access.App, appTokens map[string]string, appCerts map[string][32]byte) *Authenticator {
	a := &Authenticator{tokens: map[[32]byte]Identity{}, apps: apps, certs: map[[32]byte]*access.App{}}
	a.tokens[sha256.Sum256([]byte(adminToken))] = Identity{Admin: true}
	for id, tok := range appTokens {
		a.tokens[sha256.Sum256([]byte(tok))] = Identity{App: apps[id]}
	}
	for id, fp := range appCerts {
		a.certs[fp] = apps[id]
	}
	return a
}

// authenticate finds the identity of a request: its bearer token, or the
// app of its verified TLS client certificate (apps[].certificate), or both
// when they name the same app. A certificate of one app with a token of
// another (or the admin token) is refused. Tokens are compared by their
// SHA-256, so the lookup time does not depend on how much of a guess was
// right.
func (a *Authenticator) authenticate(ctx context.Context) (Identity, error) {
	certApp, certFP, hasCert := a.certificateApp(ctx)
	vals := metadata.ValueFromIncomingContext(ctx, "authorization")
	if len(vals) == 0 {
		switch {
		case certApp != nil:
			return Identity{App: certApp, Certificate: true}, nil
		case hasCert:
			return Identity{}, status.Errorf(codes.Unauthenticated, "missing authorization metadata, and the client certificate (SHA-256 %s) is no app's "+
				"(apps[].certificate in .nexus/config.yaml): send \"authorization: Bearer <token>\"", workspace.FormatFingerprint(certFP))
		}
		return Identity{}, status.Error(codes.Unauthenticated, "missing authorization metadata: send \"authorization: Bearer <token>\"")
	}
	tok, ok := strings.CutPrefix(vals[0], "Bearer ")
	if !ok || tok == "" {
		return Identity{}, status.Error(codes.Unauthenticated, "authorization metadata must be \"Bearer <token>\"")
	}
	id, ok := a.Identify(tok)
	if !ok {
		return Identity{}, status.Error(codes.Unauthenticated, "unknown token")
	}
	if certApp != nil && (id.App == nil || id.App.ID != certApp.ID) {
		who := "the admin token"
		if id.App != nil {
			who = fmt.Sprintf("the token of app %q", id.App.ID)
		}
		return Identity{}, status.Errorf(codes.Unauthenticated, "the client certificate is app %q's and the request carries %s: send the app's own token, or none", certApp.ID, who)
	}
	id.Certificate = certApp != nil
	return id, nil
}

// certificateApp returns the app of the request's TLS client certificate
// and the certificate's fingerprint; hasCert is false when there is none.
// Only a certificate that the TLS handshake verified against the client CA
// counts.
func (a *Authenticator) certificateApp(ctx context.Context) (app *access.App, fp [32]byte, hasCert bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil, fp, false
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.PeerCertificates) == 0 {
		return nil, fp, false
	}
	fp = sha256.Sum256(info.State.PeerCertificates[0].Raw)
	return a.certs[fp], fp, true
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
