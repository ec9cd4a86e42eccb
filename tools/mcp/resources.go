package mcp

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource templates, resource subscriptions, and what servers say
// changed.
//
// A subscription belongs to whoever made it (an editor, a gRPC stream):
// [Hub.Subscribe] returns the release that ends it, and the party calls it
// when it goes. The hub counts the parties of each (server, URI): the
// first one sends resources/subscribe, the last one's release sends
// resources/unsubscribe, and the subscriptions of a server are sent again
// to each new session after a restart. What servers say — a resource
// updated, a list changed — is published on the bus ([ResourceUpdated],
// [ListChanged]); each party picks what it subscribed to. An update for a
// URI nobody subscribed to is dropped.

// ResourceTemplate is a resource template of a server.
type ResourceTemplate struct {
	Server, URITemplate, Name, Title, Description, MIMEType string
}

// ResourceUpdated is published when a server says a subscribed resource
// (or one under it) changed: read it again.
type ResourceUpdated struct {
	Server, URI string
	Time        time.Time
}

// ListChanged is published when a server's tools, resources or prompts
// changed: list them again. For tools, the registry already has the new
// list.
type ListChanged struct {
	Server string
	Kind   string // ListTools, ListResources or ListPrompts
	Time   time.Time
}

// The kinds of ListChanged.
const (
	ListTools     = "tools"
	ListResources = "resources"
	ListPrompts   = "prompts"
)

// ErrNotSupported is the error for a feature the server does not declare.
var ErrNotSupported = errors.New("the MCP server does not offer it")

// offering yields the live sessions of a server, or of every ready server
// when name is "", whose capabilities pass has (they offer resources, or
// prompts); a server between sessions is left out.
func (h *Hub) offering(name string, has func(*mcp.ServerCapabilities) bool) (iter.Seq2[*server, *mcp.ClientSession], error) {
	servers, err := h.ready(name)
	if err != nil {
		return nil, err
	}
	return func(yield func(*server, *mcp.ClientSession) bool) {
		for _, s := range servers {
			session, _, terr := s.current()
			if terr != nil {
				continue
			}
			if caps := session.InitializeResult().Capabilities; caps == nil || !has(caps) {
				continue
			}
			if !yield(s, session) {
				return
			}
		}
	}, nil
}

// ResourceTemplates lists the resource templates of a server, or of every
// ready server when name is "".
func (h *Hub) ResourceTemplates(ctx context.Context, name string) ([]ResourceTemplate, error) {
	sessions, err := h.offering(name, func(c *mcp.ServerCapabilities) bool { return c.Resources != nil })
	if err != nil {
		return nil, err
	}
	var out []ResourceTemplate
	for s, session := range sessions {
		for t, err := range session.ResourceTemplates(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("MCP server %q: listing resource templates: %w", s.cfg.Name, err)
			}
			out = append(out, ResourceTemplate{Server: s.cfg.Name, URITemplate: t.URITemplate, Name: t.Name, Title: t.Title,
				Description: t.Description, MIMEType: t.MIMEType})
		}
	}
	return out, nil
}

// subscriptions counts the parties subscribed to each resource, by server
// name and URI.
type subscriptions struct {
	mu    sync.Mutex
	count map[string]map[string]int
}

// Subscribe subscribes to a resource of a server (resources/subscribe)
// for the caller, until release, which is safe to call more than once.
// Updates come on the bus as ResourceUpdated. The server must be ready
// and declare subscriptions.
func (h *Hub) Subscribe(ctx context.Context, name, uri string) (release func(), err error) {
	if uri == "" {
		return nil, errors.New("name the URI of the resource to subscribe to")
	}
	session, err := h.readySession(name, "whose resource to subscribe to")
	if err != nil {
		return nil, err
	}
	if caps := session.InitializeResult().Capabilities; caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		return nil, fmt.Errorf("MCP server %q: resource subscriptions: %w", name, ErrNotSupported)
	}
	subs := &h.subs
	subs.mu.Lock()
	if subs.count == nil {
		subs.count = map[string]map[string]int{}
	}
	if subs.count[name] == nil {
		subs.count[name] = map[string]int{}
	}
	subs.count[name][uri]++
	first := subs.count[name][uri] == 1
	subs.mu.Unlock()
	if first {
		if err := session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			h.unsubscribe(name, uri, false)
			return nil, fmt.Errorf("MCP server %q: subscribing to %s: %w", name, uri, err)
		}
	}
	var once sync.Once
	return func() { once.Do(func() { h.unsubscribe(name, uri, true) }) }, nil
}

// unsubscribe drops a party's subscription; the last one's goes to the
// server when tell is set.
func (h *Hub) unsubscribe(name, uri string, tell bool) {
	subs := &h.subs
	subs.mu.Lock()
	subs.count[name][uri]--
	last := subs.count[name][uri] <= 0
	if last {
		delete(subs.count[name], uri)
		if len(subs.count[name]) == 0 {
			delete(subs.count, name)
		}
	}
	subs.mu.Unlock()
	if !last || !tell {
		return
	}
	s, err := h.server(name)
	if err != nil {
		return
	}
	session, _, terr := s.current()
	if terr != nil {
		return // no session, no subscription left on the server
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.callTimeout())
		defer cancel()
		if err := session.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			h.logger.Debug("MCP server refused resources/unsubscribe", "server", name, "uri", uri, "error", err.Error())
		}
	}()
}

// subscribed reports whether someone is subscribed to uri of a server, or
// to a resource it is under.
func (h *Hub) subscribed(name, uri string) bool {
	h.subs.mu.Lock()
	defer h.subs.mu.Unlock()
	for sub := range h.subs.count[name] {
		if Covers(sub, uri) {
			return true
		}
	}
	return false
}

// Covers reports whether an update of uri concerns a subscription to sub:
// the same resource, or one under it (a server may name the sub-resource
// that changed).
func Covers(sub, uri string) bool {
	if uri == sub {
		return true
	}
	if !strings.HasPrefix(uri, sub) {
		return false
	}
	return strings.HasSuffix(sub, "/") || strings.HasPrefix(uri[len(sub):], "/")
}

// resubscribe sends the subscriptions of a server to its new session.
func (s *server) resubscribe(ctx context.Context, session *mcp.ClientSession) {
	subs := &s.hub.subs
	subs.mu.Lock()
	var uris []string
	for uri := range subs.count[s.cfg.Name] {
		uris = append(uris, uri)
	}
	subs.mu.Unlock()
	if len(uris) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.startupTimeout())
	defer cancel()
	for _, uri := range uris {
		if err := session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			s.hub.logger.Warn("MCP server refused a resource subscription again after its restart", "server", s.cfg.Name, "uri", uri, "error", err.Error())
		}
	}
}

// onResourceUpdated publishes an update of a subscribed resource.
func (s *server) onResourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if p := req.Params; p != nil && s.hub.subscribed(s.cfg.Name, p.URI) {
		s.hub.opts.Bus.Publish(ResourceUpdated{Server: s.cfg.Name, URI: p.URI, Time: time.Now()})
	}
}

// listChanged publishes that one of the server's lists changed.
func (s *server) listChanged(kind string) {
	s.hub.opts.Bus.Publish(ListChanged{Server: s.cfg.Name, Kind: kind, Time: time.Now()})
}
