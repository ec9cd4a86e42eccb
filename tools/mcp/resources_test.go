package mcp

import (
	"context"
	"errors"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/events"
)

func TestResourceTemplates(t *testing.T) {
	hs := serveHTTP(t, newGoServer(""))
	th := newTestHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{"web": httpEntry("web", hs.URL), "everything": stdio("everything", serverBin(t, "mcp-server-everything"))})
	th.waitState(t, "web", StateReady)
	th.waitState(t, "everything", StateReady)
	ts, err := th.ResourceTemplates(t.Context(), "web")
	want := ResourceTemplate{Server: "web", URITemplate: "test://items/{id}", Name: "item", Title: "An item", Description: "One item by its id.", MIMEType: "application/json"}
	if err != nil || len(ts) != 1 || ts[0] != want {
		t.Fatalf("templates of web: %+v %v", ts, err)
	}
	all, err := th.ResourceTemplates(t.Context(), "")
	if err != nil || len(all) < 2 {
		t.Fatalf("every server's templates: %+v %v", all, err)
	}
	servers := map[string]bool{}
	for _, tm := range all {
		servers[tm.Server] = true
	}
	if !servers["web"] || !servers["everything"] {
		t.Errorf("templates from %v", servers)
	}
	if _, err := th.ResourceTemplates(t.Context(), "nope"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("an unknown server: %v", err)
	}
}

// awaitEvent waits for the first event on sub that match accepts.
func awaitEvent[E any](t *testing.T, sub *events.Subscription, what string, match func(E) bool) E {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-sub.C:
			if e, ok := ev.(E); ok && match(e) {
				return e
			}
		case <-deadline:
			var zero E
			t.Fatalf("never published: %s", what)
			return zero
		}
	}
}

// Two parties subscribe to a resource: the server gets one subscribe, its
// updates come on the bus, and the last release unsubscribes. A restarted
// server gets the subscription again.
func TestResourceSubscriptions(t *testing.T) {
	g := newGoServer("")
	hs := serveHTTP(t, g)
	th := newTestHub(t, Options{})
	sub := th.bus.Subscribe(nil, 0)
	defer sub.Close()
	th.applyTrusted(map[string]ServerConfig{"web": httpEntry("web", hs.URL)})
	th.waitState(t, "web", StateReady)

	const uri = "test://static"
	releaseA, err := th.Subscribe(t.Context(), "web", uri)
	if err != nil {
		t.Fatal(err)
	}
	releaseB, err := th.Subscribe(t.Context(), "web", uri)
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	if n := g.subs[uri]; n != 1 {
		t.Errorf("the server got %d subscribes, want 1", n)
	}
	g.mu.Unlock()

	g.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: uri})
	u := awaitEvent(t, sub, "the update", func(u ResourceUpdated) bool { return true })
	if u.Server != "web" || u.URI != uri || u.Time.IsZero() {
		t.Errorf("update %+v", u)
	}

	// Restarted, the server is subscribed again.
	if err := th.Restart("web"); err != nil {
		t.Fatal(err)
	}
	g.waitFor(t, "the subscription again", func() bool { return g.subs[uri] == 2 })
	th.waitState(t, "web", StateReady)
	g.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: uri})
	awaitEvent(t, sub, "the update after the restart", func(u ResourceUpdated) bool { return u.URI == uri })

	releaseA()
	releaseA() // twice is once
	g.mu.Lock()
	if n := g.subs[uri]; n != 2 {
		t.Errorf("the first release unsubscribed: %d", n)
	}
	g.mu.Unlock()
	releaseB()
	g.waitFor(t, "resources/unsubscribe", func() bool { return g.subs[uri] == 1 })
	if th.subscribed("web", uri) {
		t.Error("still subscribed after both releases")
	}

	// Errors: an unknown server, a server without subscriptions.
	if _, err := th.Subscribe(t.Context(), "nope", uri); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("an unknown server: %v", err)
	}
	th.applyTrusted(map[string]ServerConfig{"web": httpEntry("web", hs.URL), "changing": changing(t)})
	th.waitState(t, "changing", StateReady)
	if _, err := th.Subscribe(t.Context(), "changing", "x://y"); !errors.Is(err, ErrNotSupported) {
		t.Errorf("a server without resources: %v", err)
	}
}

// A real server of another SDK: server-everything over stdio sends the
// updates of the resources it was subscribed to.
func TestResourceSubscriptionEverything(t *testing.T) {
	th := newTestHub(t, Options{})
	sub := th.bus.Subscribe(nil, 0)
	defer sub.Close()
	th.applyTrusted(map[string]ServerConfig{"everything": stdio("everything", serverBin(t, "mcp-server-everything"))})
	th.waitState(t, "everything", StateReady)
	rs, err := th.Resources(t.Context(), "everything")
	if err != nil || len(rs) == 0 {
		t.Fatalf("resources %v %v", rs, err)
	}
	release, err := th.Subscribe(t.Context(), "everything", rs[0].URI)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	wantCompleted(t, th.call(t, "everything", "toggle-subscriber-updates", `{}`), "")
	awaitEvent(t, sub, "an update of "+rs[0].URI, func(u ResourceUpdated) bool { return u.Server == "everything" && u.URI == rs[0].URI })
}

// Lists that change are published: resources, prompts, and tools once the
// registry has the new list.
func TestListChanged(t *testing.T) {
	g := newGoServer("")
	hs := serveHTTP(t, g)
	th := newTestHub(t, Options{})
	sub := th.bus.Subscribe(nil, 0)
	defer sub.Close()
	th.applyTrusted(map[string]ServerConfig{"web": httpEntry("web", hs.URL)})
	th.waitState(t, "web", StateReady)

	g.AddResource(&sdk.Resource{URI: "test://new", Name: "new"}, textResource("new"))
	awaitEvent(t, sub, "resources changed", func(c ListChanged) bool { return c.Server == "web" && c.Kind == ListResources })
	g.AddPrompt(&sdk.Prompt{Name: "bye"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{}, nil
	})
	awaitEvent(t, sub, "prompts changed", func(c ListChanged) bool { return c.Server == "web" && c.Kind == ListPrompts })
	sdk.AddTool(g.Server, &sdk.Tool{Name: "added"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return textResult("added"), nil, nil
	})
	awaitEvent(t, sub, "tools changed", func(c ListChanged) bool { return c.Server == "web" && c.Kind == ListTools })
	if _, ok := th.m.Lookup("added", "web"); !ok {
		t.Error("tools changed was published before the registry had the new tool")
	}
	ps, err := th.Prompts(t.Context(), "web")
	if err != nil || len(ps) != 2 {
		t.Errorf("prompts after the change: %v %v", ps, err)
	}
}

func TestCovers(t *testing.T) {
	for _, c := range []struct {
		sub, uri string
		want     bool
	}{
		{"file:///a", "file:///a", true},
		{"file:///a", "file:///a/b", true},
		{"file:///a/", "file:///a/b", true},
		{"file:///a", "file:///ab", false},
		{"file:///a/b", "file:///a", false},
	} {
		if got := Covers(c.sub, c.uri); got != c.want {
			t.Errorf("Covers(%q, %q) = %v", c.sub, c.uri, got)
		}
	}
}
