package rpc

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/access"
)

// A request is the app of its bearer token, or of its verified client
// certificate (apps[].certificate), or of both when they agree; a
// certificate of one app with the token of another, or with the admin
// token, is refused.
func TestAuthenticateCertificate(t *testing.T) {
	apps := map[string]*access.App{"planner": {ID: "planner"}, "coder": {ID: "coder"}}
	plannerCert := &x509.Certificate{Raw: []byte("planner's certificate")}
	strangerCert := &x509.Certificate{Raw: []byte("a certificate of no app")}
	a := NewAuthenticator("admin-token-0123456789", apps,
		map[string]string{"planner": "planner-token-0123456789", "coder": "coder-token-0123456789"},
		map[string][32]byte{"planner": sha256.Sum256(plannerCert.Raw)})

	// conn is a request's connection: a client certificate, verified or
	// not, or none.
	conn := func(cert *x509.Certificate, verified bool) context.Context {
		ctx := context.Background()
		if cert == nil {
			return ctx
		}
		state := tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
		if verified {
			state.VerifiedChains = [][]*x509.Certificate{{cert}}
		}
		return peer.NewContext(ctx, &peer.Peer{AuthInfo: credentials.TLSInfo{State: state}})
	}
	for _, c := range []struct {
		name     string
		cert     *x509.Certificate
		verified bool
		token    string
		want     string // the app, "admin", or "" for refused
		err      string
	}{
		{name: "a token alone", token: "coder-token-0123456789", want: "coder"},
		{name: "the admin token alone", token: "admin-token-0123456789", want: "admin"},
		{name: "an app's certificate alone", cert: plannerCert, verified: true, want: "planner"},
		{name: "an app's certificate and its token", cert: plannerCert, verified: true, token: "planner-token-0123456789", want: "planner"},
		{name: "an app's certificate and another app's token", cert: plannerCert, verified: true, token: "coder-token-0123456789",
			err: `the client certificate is app "planner"'s and the request carries the token of app "coder"`},
		{name: "an app's certificate and the admin token", cert: plannerCert, verified: true, token: "admin-token-0123456789",
			err: `the client certificate is app "planner"'s and the request carries the admin token`},
		{name: "an app's certificate and an unknown token", cert: plannerCert, verified: true, token: "nobody-0123456789", err: "unknown token"},
		{name: "a certificate the handshake did not verify", cert: plannerCert, err: "missing authorization metadata: send"},
		{name: "a certificate of no app, alone", cert: strangerCert, verified: true, err: "the client certificate (SHA-256 "},
		{name: "a certificate of no app, with a token", cert: strangerCert, verified: true, token: "coder-token-0123456789", want: "coder"},
		{name: "nothing", err: "missing authorization metadata"},
	} {
		ctx := conn(c.cert, c.verified)
		if c.token != "" {
			ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", "Bearer "+c.token))
		}
		id, err := a.authenticate(ctx)
		got := "admin"
		if id.App != nil {
			got = id.App.ID
		}
		switch {
		case c.err != "" && (status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want Unauthenticated %q", c.name, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s: %s, %v; want %s", c.name, got, err, c.want)
		case c.err == "" && id.Certificate != (c.verified && c.cert == plannerCert):
			t.Errorf("%s: known by its certificate = %v", c.name, id.Certificate)
		}
	}
}
