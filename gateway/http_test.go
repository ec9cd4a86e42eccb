package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
)

// TestSessionCapCountsAnOpeningSessionOnce: a session whose answer has
// reached its client is live, and no longer counts as being opened, even
// while its handler has not returned yet. Its client may open the next
// session in that time; before, the session counted twice there, and a
// token at one under the cap lost a live session.
func TestSessionCapCountsAnOpeningSessionOnce(t *testing.T) {
	bus := events.New()
	m, err := tools.NewManager(tools.Options{Bus: bus, Gate: func(context.Context, *tools.GateRequest, func(tools.ICERC)) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	h := mcp.New(mcp.Options{Workspace: t.TempDir(), Tools: m, Bus: bus, TrustFile: filepath.Join(t.TempDir(), "trust.json")})
	t.Cleanup(h.Close)
	g := New(Options{Tools: m, Hub: h, Bus: bus})

	// The chain of HTTPHandler, with handlers that go on after their
	// answer until the test ends, as a handler may on a busy machine.
	party := access.ForApp(&access.App{ID: "greedy"})
	streamable := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return g.Server(party) }, nil)
	held := make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streamable.ServeHTTP(w, r)
		if r.Header.Get("Mcp-Session-Id") == "" {
			w.(http.Flusher).Flush()
			<-held
		}
	})
	verify := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: party.String(), Expiration: time.Now().Add(time.Hour), Extra: map[string]any{"party": party}}, nil
	}
	srv := httptest.NewServer(auth.RequireBearerToken(verify, nil)(g.capSessions(slow, HTTPOptions{MaxSessionsPerToken: 2})))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(held) })

	post := func(session, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer t")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	open := func() string {
		t.Helper()
		resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		resp.Body.Close()
		id := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || id == "" {
			t.Fatalf("a session: %d", resp.StatusCode)
		}
		return id
	}
	first := open()
	second := open()
	for i, id := range []string{first, second} {
		resp := post(id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i+2))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("session %d of 2 (the cap): %d, want %d", i+1, resp.StatusCode, http.StatusOK)
		}
	}
}
