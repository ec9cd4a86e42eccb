package gateway

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// Resource subscriptions: a client's resources/subscribe becomes a
// subscription of the gateway at the hub (one per URI, however many
// clients subscribed), and the hub's ResourceUpdated reaches the clients
// the go-sdk knows subscribed. The hub's subscription ends when the last
// client unsubscribes; one of a client that went without unsubscribing
// lasts until the daemon stops.

type subscription struct {
	n       int
	release func()
}

// subscriber is the resources/subscribe handler of party: it may
// subscribe to what it may read.
func (g *Gateway) subscriber(party access.Party) func(context.Context, *sdk.SubscribeRequest) error {
	return func(ctx context.Context, req *sdk.SubscribeRequest) error {
		return g.subscribe(ctx, party, req)
	}
}

func (g *Gateway) subscribe(ctx context.Context, party access.Party, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.resourceEntries[uri]
	if !ok {
		return fmt.Errorf("no MCP server has the resource %s", uri)
	}
	if err := g.sessionOwned(e.server); err != nil {
		return err
	}
	if err := g.opts.Hub.As(party).Readable(ctx, e.server, policy.ResourceTool); err != nil {
		return err
	}
	if s, ok := g.subs[uri]; ok {
		s.n++
		return nil
	}
	release, err := g.opts.Hub.Subscribe(ctx, e.server, uri)
	if err != nil {
		return err
	}
	g.subs[uri] = &subscription{n: 1, release: release}
	return nil
}

func (g *Gateway) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s, ok := g.subs[req.Params.URI]; ok {
		if s.n--; s.n == 0 {
			s.release()
			delete(g.subs, req.Params.URI)
		}
	}
	return nil
}

// resourceUpdated tells every server's subscribed sessions, of a hub
// server of the files.
func (g *Gateway) resourceUpdated(ctx context.Context, ev mcp.ResourceUpdated) {
	if g.opts.Hub.OwnerOf(ev.Server) != "" {
		return // a session's server: nothing of the gateway's clients
	}
	g.mu.Lock()
	servers := make([]*sdk.Server, 0, len(g.servers))
	for _, ps := range g.servers {
		servers = append(servers, ps.server)
	}
	g.mu.Unlock()
	for _, s := range servers {
		s.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: ev.URI})
	}
}

// closeSubscriptions ends the gateway's subscriptions at the hub.
func (g *Gateway) closeSubscriptions() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for uri, s := range g.subs {
		s.release()
		delete(g.subs, uri)
	}
}
