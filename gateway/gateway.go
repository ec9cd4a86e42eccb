// Package gateway serves Nexus to MCP clients: the core tools and the
// tools, resources and prompts of every McpHub server of the
// configuration files (not those an editor's session brought, which are
// that session's), over the MCP protocol (nexusd mcp on stdio, /mcp over Streamable HTTP). Start with
// [New] and [Gateway.Server].
//
// Every tools/call is a Nexus tool call through the [tools.Manager]:
// validated, decided by the policy (an ask reaches the client through
// elicitation when it declared it, else the editor's prompt), audited and
// published on the bus with the caller's party as its author. A hub
// server's questions and sampling requests during the call go to the
// client too (ask.go); completion/complete reaches the server behind the
// prompt or resource (complete.go). A resources/read or prompts/get is the
// caller's call of SERVER/mcp_resource or SERVER/mcp_prompt, decided and
// audited the same way (see [mcp.Reader]); the lists leave out what the
// caller may not read (content.go).
// A client's notifications/cancelled cancels the call; the call's progress
// reaches the client as notifications/progress when it asked with a
// progress token.
//
// Names: core tools keep their names; a hub server's tools and prompts are
// SERVER<separator>NAME (mcp.separator, "__" by default), or their own
// names for a server whose entry says "unprefixed": true and no other
// name is the same. A name an MCP client could not use (not
// ^[a-zA-Z0-9_-]{1,64}$) is left out, with a warning in the daemon log.
package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/internal/toolschema"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
)

// Options configure a Gateway.
type Options struct {
	Tools     *tools.Manager
	Hub       *mcp.Hub
	Bus       *events.Bus
	Logger    *slog.Logger
	Workspace string
	// BlobDir is the hub's blob directory (default
	// <workspace>/.nexus/mcp/blobs): results' files are read back from it.
	BlobDir string
	// Separator joins a server's name and a tool's or prompt's name
	// (mcp.separator); default "__".
	Separator string
	Version   string
}

// Gateway holds one MCP server per party (the person, each app), all
// showing the same tools, and keeps their lists in step with the
// manager's tools and the hub's servers.
type Gateway struct {
	opts   Options
	logger *slog.Logger

	// synced: the names were computed once; a server made before that
	// computes them itself, so that its first client sees every tool.
	synced atomic.Bool

	mu sync.Mutex
	// servers are the MCP servers by party key.
	servers map[string]*partyServer
	// toolRefs maps each exposed tool name to the tool, and toolDefs keeps
	// what was last added, to add again only what changed.
	toolRefs map[string]toolRef
	toolDefs map[string]string
	// prompts likewise.
	promptRefs map[string]promptRef
	promptDefs map[string]string
	// resources are the exposed resource URIs and templates, by server.
	resources       map[string]string
	templates       map[string]string
	resourceEntries map[string]resourceEntry
	templateEntries map[string]resourceEntry
	// urlQuestions are the clients sent to a URL by a hub server's
	// question, until the server says the step is complete.
	urlQuestions urlQuestions
	// subs are the hub subscriptions the clients asked for, by URI.
	subs map[string]*subscription

	// conns name the socket connections' sessions.
	conns connSessions
}

type toolRef struct{ server, name string }

type promptRef struct {
	server, name string
	prompt       mcp.Prompt
}

type partyServer struct {
	party  access.Party
	server *sdk.Server
}

// New returns a gateway; [Gateway.Run] keeps it in step.
func New(opts Options) *Gateway {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Separator == "" {
		opts.Separator = "__"
	}
	return &Gateway{opts: opts, logger: opts.Logger, servers: map[string]*partyServer{},
		toolRefs: map[string]toolRef{}, toolDefs: map[string]string{},
		promptRefs: map[string]promptRef{}, promptDefs: map[string]string{},
		resources: map[string]string{}, templates: map[string]string{}, subs: map[string]*subscription{}}
}

// validName is what MCP clients accept as a tool name (Claude Code, the
// OpenAI API); the spec allows more, the clients do not.
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Run keeps the servers' tools, prompts and resources in step with the
// manager and the hub until ctx ends: at every change of a server's state
// or lists, the lists are computed again and only what changed is added
// or removed, so that clients get list_changed notifications for real
// changes only.
func (g *Gateway) Run(ctx context.Context) {
	sub := g.opts.Bus.Subscribe(func(ev any) bool {
		switch ev.(type) {
		case mcp.Status, mcp.ListChanged, mcp.ResourceUpdated, mcp.ElicitationComplete:
			return true
		}
		return false
	}, 256)
	defer sub.Close()
	defer g.closeSubscriptions()
	g.sync(ctx)
	// Changes come in bursts (a server starting publishes several
	// statuses): sync once a burst is over.
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sub.C:
			if !ok {
				return
			}
			switch ev := ev.(type) {
			case mcp.ResourceUpdated:
				g.resourceUpdated(ctx, ev)
				continue
			case mcp.ElicitationComplete:
				g.elicitationComplete(ctx, ev)
				continue
			}
			if timer == nil {
				timer = time.After(20 * time.Millisecond)
			}
		case <-timer:
			timer = nil
			g.sync(ctx)
		}
	}
}

// Server returns the MCP server of party, made on first use. Its tool
// calls act as party.
func (g *Gateway) Server(party access.Party) *sdk.Server {
	if !g.synced.Load() {
		g.sync(context.Background())
	}
	key := party.String()
	g.mu.Lock()
	defer g.mu.Unlock()
	if ps, ok := g.servers[key]; ok {
		return ps.server
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "nexus", Title: "Nexus", Version: g.opts.Version}, &sdk.ServerOptions{
		Logger: g.logger,
		Instructions: "Nexus: the workspace's tools (read_file, write_file, execute_command, ...) and the tools of its MCP servers " +
			"(SERVER" + g.opts.Separator + "tool). Every call is checked by the workspace's permission policy and audited.",
		Capabilities: &sdk.ServerCapabilities{
			Tools:       &sdk.ToolCapabilities{ListChanged: true},
			Prompts:     &sdk.PromptCapabilities{ListChanged: true},
			Resources:   &sdk.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Completions: &sdk.CompletionCapabilities{},
		},
		CompletionHandler:  g.completer(party),
		SubscribeHandler:   g.subscriber(party),
		UnsubscribeHandler: g.unsubscribe,
	})
	ps := &partyServer{party: party, server: s}
	g.servers[key] = ps
	for name, ref := range g.toolRefs {
		if d, ok := g.opts.Tools.Lookup(ref.name, ref.server); ok {
			s.AddTool(g.sdkTool(name, d), g.toolHandler(ps, ref))
		}
	}
	for name, ref := range g.promptRefs {
		s.AddPrompt(sdkPrompt(name, ref.prompt), g.promptHandler(ps, ref))
	}
	g.addResourcesLocked(ps)
	s.AddReceivingMiddleware(g.hideUnreadable(party))
	return s
}

// sync computes the exposed names again and updates every server.
func (g *Gateway) sync(ctx context.Context) {
	defer g.synced.Store(true)
	unprefixed := map[string]bool{}
	// owned says, by server name, whether a session brought the server:
	// its tools, prompts and resources are that session's alone.
	owned := map[string]bool{}
	var ready []string
	for _, st := range g.opts.Hub.Servers() {
		owned[st.Name] = st.Session != ""
		if owned[st.Name] {
			continue
		}
		unprefixed[st.Name] = st.Unprefixed
		if st.State == mcp.StateReady {
			ready = append(ready, st.Name)
		}
	}
	defs := g.withoutSessions(g.opts.Tools.List(""), owned)
	refs := map[string]toolRef{}
	hashes := map[string]string{}
	byName := map[string]tools.Definition{}
	// Core tools first, then prefixed names, then unprefixed ones where
	// free: a name already taken stays prefixed.
	for pass := 0; pass < 3; pass++ {
		for _, d := range defs {
			var name string
			switch {
			case d.ServerName == "" && pass == 0:
				name = d.Name
			case d.ServerName != "" && pass == 1 && !unprefixed[d.ServerName]:
				name = d.ServerName + g.opts.Separator + d.Name
			case d.ServerName != "" && pass == 2 && unprefixed[d.ServerName]:
				name = d.Name
				if _, taken := refs[name]; taken {
					name = d.ServerName + g.opts.Separator + d.Name
				}
			default:
				continue
			}
			if !validName.MatchString(name) {
				g.logger.Warn("MCP gateway: a tool is left out: its name is not one MCP clients accept (^[a-zA-Z0-9_-]{1,64}$)",
					"server", d.ServerName, "tool", d.Name, "name", name)
				continue
			}
			if prev, taken := refs[name]; taken {
				g.logger.Warn("MCP gateway: a tool is left out: another has the same name", "server", d.ServerName, "tool", d.Name,
					"name", name, "kept", prev.server+"/"+prev.name)
				continue
			}
			refs[name] = toolRef{d.ServerName, d.Name}
			byName[name] = d
			hash, _ := json.Marshal(d)
			hashes[name] = string(hash)
		}
	}
	prompts := g.promptsOf(ctx, ready, unprefixed)
	resources, templates := g.resourcesOf(ctx, ready)

	g.mu.Lock()
	defer g.mu.Unlock()
	var gone []string
	for name := range g.toolRefs {
		if _, ok := refs[name]; !ok {
			gone = append(gone, name)
		}
	}
	var changed []string
	for name, h := range hashes {
		if g.toolDefs[name] != h {
			changed = append(changed, name)
		}
	}
	g.toolRefs, g.toolDefs = refs, hashes
	for _, ps := range g.servers {
		if len(gone) > 0 {
			ps.server.RemoveTools(gone...)
		}
		for _, name := range changed {
			ps.server.AddTool(g.sdkTool(name, byName[name]), g.toolHandler(ps, refs[name]))
		}
	}
	g.updatePromptsLocked(prompts)
	g.updateResourcesLocked(resources, templates)
}

// withoutSessions drops from defs the tools of the servers sessions
// brought: those owned says, and those of servers that came after it was
// made (the hub is asked, and owned learns the answer).
func (g *Gateway) withoutSessions(defs []tools.Definition, owned map[string]bool) []tools.Definition {
	out := defs[:0]
	for _, d := range defs {
		if d.ServerName != "" {
			o, known := owned[d.ServerName]
			if !known {
				o = g.opts.Hub.OwnerOf(d.ServerName) != ""
				owned[d.ServerName] = o
			}
			if o {
				continue
			}
		}
		out = append(out, d)
	}
	return out
}

// sessionOwned refuses a server a session brought: a name the gateway
// exposed may have changed hands since it was listed.
func (g *Gateway) sessionOwned(server string) error {
	if server != "" && g.opts.Hub.OwnerOf(server) != "" {
		return fmt.Errorf("%s: MCP server %q belongs to an editor's session, not to the gateway's clients", tools.CodePermissionDenied, server)
	}
	return nil
}

// sdkTool is the MCP tool of a definition, under name. Its input schema is
// the plain one providers accept (toolschema.Plain): clients hand it to
// their model's provider, and some refuse a top-level oneOf or anyOf; the
// manager still validates a call against the full schema.
func (g *Gateway) sdkTool(name string, d tools.Definition) *sdk.Tool {
	schema, desc := toolschema.Plain(d.InputSchema, d.Description)
	t := &sdk.Tool{Name: name, Title: d.Title, Description: desc, InputSchema: schema}
	if len(d.OutputSchema) > 0 {
		t.OutputSchema = d.OutputSchema
	}
	if a := d.Annotations; a != nil {
		t.Annotations = &sdk.ToolAnnotations{ReadOnlyHint: a.ReadOnly, IdempotentHint: a.Idempotent,
			DestructiveHint: &a.Destructive, OpenWorldHint: &a.OpenWorld}
		return t
	}
	switch d.Kind {
	case tools.KindRead:
		t.Annotations = &sdk.ToolAnnotations{ReadOnlyHint: true}
	case tools.KindDelete:
		yes := true
		t.Annotations = &sdk.ToolAnnotations{DestructiveHint: &yes}
	}
	return t
}

// toolHandler runs a tools/call as a Nexus tool call of ps's party.
func (g *Gateway) toolHandler(ps *partyServer, ref toolRef) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if err := g.sessionOwned(ref.server); err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
		}
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		er := tools.ExecuteRequest{ToolName: ref.name, ServerName: ref.server, Arguments: args, Party: ps.party,
			Session: g.sessionOf(req.Session)}
		if token := req.Params.GetProgressToken(); token != nil {
			er.OnUpdate = progressSender(ctx, req.Session, token)
		}
		if ref.server != "" {
			defer g.forwardLogs(ctx, req.Session, ref.server)()
		}
		ctx = g.asking(ctx, req.Session, &er)
		call := g.opts.Tools.Execute(ctx, er)
		return g.result(ref, call), nil
	}
}

// progressSender returns an OnUpdate that sends each new progress of the
// call to the client. OnUpdate must not block, so a goroutine sends the
// latest one.
func progressSender(ctx context.Context, session *sdk.ServerSession, token any) func(tools.Call) {
	var (
		mu      sync.Mutex
		last    *tools.Progress
		pending bool
	)
	wake := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			mu.Lock()
			p := *last
			pending = false
			mu.Unlock()
			session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message})
		}
	}()
	return func(c tools.Call) {
		if c.Progress == nil || c.Done() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if last != nil && *last == *c.Progress {
			return
		}
		p := *c.Progress
		last = &p
		if !pending {
			pending = true
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
}

// result is the MCP result of a finished call. A hub tool's result is the
// server's own (its images and binary resources, which the hub keeps as
// files, read back); a core tool's is its JSON as text and, when it is an
// object, as structured content. A call that ended in error is an isError
// result saying its code and message. What postToolUse hooks said for the
// model (Call.Notes) follows, a text content each.
func (g *Gateway) result(ref toolRef, call tools.Call) *sdk.CallToolResult {
	res := g.outcome(ref, call)
	for _, n := range call.Notes {
		res.Content = append(res.Content, &sdk.TextContent{Text: "[a postToolUse hook says] " + n})
	}
	return res
}

func (g *Gateway) outcome(ref toolRef, call tools.Call) *sdk.CallToolResult {
	if call.Status == tools.StatusCompleted {
		if ref.server != "" {
			res, err := g.hubResult(call.ResultJSON)
			if err == nil {
				return res
			}
			g.logger.Warn("MCP gateway: a hub result could not be read back", "server", ref.server, "tool", ref.name, "error", err.Error())
		}
		res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(call.ResultJSON)}}}
		var obj map[string]any
		if json.Unmarshal(call.ResultJSON, &obj) == nil && obj != nil {
			res.StructuredContent = obj
		}
		return res
	}
	code, msg := tools.CodeExecutionFailed, "the call failed"
	if call.Error != nil {
		code, msg = call.Error.Code, call.Error.Message
	}
	// An MCP tool's own isError result keeps its content.
	if ref.server != "" && code == tools.CodeExecutionFailed && len(call.ResultJSON) > 0 {
		if res, err := g.hubResult(call.ResultJSON); err == nil && res.IsError {
			return res
		}
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("%s: %s", code, msg)}}}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// forwardLogs sends the log messages (notifications/message) of server to
// the calling client while its call runs, at the level the client set
// (none until it sets one); a message of another call to the same server
// at the same time goes along too. It returns the function that stops it.
func (g *Gateway) forwardLogs(ctx context.Context, session *sdk.ServerSession, server string) (stop func()) {
	sub := g.opts.Bus.Subscribe(func(ev any) bool {
		m, ok := ev.(mcp.LogMessage)
		return ok && m.Server == server
	}, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range sub.C {
			m := ev.(mcp.LogMessage)
			var data any
			json.Unmarshal(m.Data, &data)
			//lint:ignore SA1019 logging is deprecated only by the draft 2026-07-28 (SEP-2577); clients speak 2025-11-25 and before, where it is current.
			session.Log(ctx, &sdk.LoggingMessageParams{Level: sdk.LoggingLevel(m.Level), Logger: m.Logger, Data: data})
		}
	}()
	return func() {
		sub.Close()
		<-done
	}
}
