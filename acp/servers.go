package acp

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// The MCP servers a client passes to session/new (or load, or resume) join
// the McpHub as its connection's: they wait for the person's approval like
// any server entry, the approval is asked through the client before the
// session's next prompt — when the client is the person's own editor; an
// app's client (nexusd acp with an app token) is never asked, and its
// servers wait for the person — and is remembered (pinned) as nexus mcp
// trust remembers it, and only the agents of the connection's sessions may
// call their tools. Several sessions of one connection passing the same server
// (the usual case: an editor passes its servers to every session) share
// it. The servers stop when the connection ends.

// serverConfig is the hub entry of a server the client passed.
func (c *conn) serverConfig(s acpsdk.McpServer, cwd string) (mcp.ServerConfig, error) {
	source := "the ACP client (" + c.key + ")"
	if app := c.opts.Party.AppID(); app != "" {
		source = fmt.Sprintf("the ACP client of app %q (%s)", app, c.key) // the person sees who proposes it
	}
	switch {
	case s.Stdio != nil:
		cfg := mcp.ServerConfig{Name: s.Stdio.Name, Source: source, Transport: "stdio", Command: s.Stdio.Command,
			Args: s.Stdio.Args, Cwd: cwd, Enabled: true}
		if s.Stdio.Command == "" {
			return cfg, invalidParams("MCP server %q: command is empty", s.Stdio.Name)
		}
		if len(s.Stdio.Env) > 0 {
			cfg.Env = map[string]string{}
			for _, e := range s.Stdio.Env {
				cfg.Env[e.Name] = e.Value
			}
		}
		return cfg, checkServerName(cfg.Name)
	case s.Http != nil:
		if c.opts.Hub == nil {
			return mcp.ServerConfig{}, invalidParams("MCP server %q: this agent takes no MCP servers", s.Http.Name)
		}
		cfg := mcp.ServerConfig{Name: s.Http.Name, Source: source, Transport: "http", URL: s.Http.Url, Enabled: true}
		if !strings.HasPrefix(s.Http.Url, "http://") && !strings.HasPrefix(s.Http.Url, "https://") {
			return cfg, invalidParams("MCP server %q: url %q is not an http or https URL", s.Http.Name, s.Http.Url)
		}
		if len(s.Http.Headers) > 0 {
			cfg.Headers = map[string]string{}
			for _, h := range s.Http.Headers {
				cfg.Headers[h.Name] = h.Value
			}
		}
		return cfg, checkServerName(cfg.Name)
	case s.Sse != nil:
		return mcp.ServerConfig{}, invalidParams("MCP server %q: the SSE transport is not supported (mcpCapabilities.sse is false); use Streamable HTTP", s.Sse.Name)
	case s.Acp != nil:
		return mcp.ServerConfig{}, invalidParams("MCP server %q: MCP over ACP is not supported (mcpCapabilities.acp is false)", s.Acp.Name)
	}
	return mcp.ServerConfig{}, invalidParams("an MCP server of mcpServers has no transport")
}

func checkServerName(name string) error {
	if name == "" {
		return invalidParams("an MCP server of mcpServers has no name")
	}
	if strings.ContainsFunc(name, func(r rune) bool { return r == '/' || unicode.IsSpace(r) }) {
		return invalidParams("MCP server name %q must not contain \"/\" or white space (its tools are named server/tool)", name)
	}
	return nil
}

// checkServers refuses servers the request cannot have before anything is
// made.
func (c *conn) checkServers(servers []acpsdk.McpServer) error {
	if len(servers) > 0 && c.opts.Hub == nil {
		return invalidParams("this agent takes no MCP servers (no McpHub)")
	}
	seen := map[string]bool{}
	for _, s := range servers {
		cfg, err := c.serverConfig(s, c.opts.Workspace)
		if err != nil {
			return err
		}
		if seen[cfg.Name] {
			return invalidParams("mcpServers names %q twice", cfg.Name)
		}
		seen[cfg.Name] = true
	}
	return nil
}

// addServers adds the servers of a session to the connection's. A server
// already there with the same launch values is shared; with others, it is
// an error, and nothing changes.
func (c *conn) addServers(s *session, servers []acpsdk.McpServer) error {
	if len(servers) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	next := maps.Clone(c.servers)
	if next == nil {
		next = map[string]mcp.ServerConfig{}
	}
	for _, srv := range servers {
		cfg, err := c.serverConfig(srv, s.cwd)
		if err != nil {
			return err
		}
		if prev, ok := next[cfg.Name]; ok && prev.Launch().Pin() != cfg.Launch().Pin() {
			return invalidParams("MCP server %q: another session of this connection runs a server of that name with other values; give it another name", cfg.Name)
		} else if !ok {
			next[cfg.Name] = cfg
		}
		s.servers = append(s.servers, cfg.Name)
	}
	if err := c.opts.Hub.SetSessionServers(c.key, next); err != nil {
		return invalidParams("%v", err)
	}
	c.servers = next
	return nil
}

// approveServers asks the person, through the client, about each server
// of the session that waits for approval, and then waits until the
// approved ones are ready (or failed), so that the prompt's agent sees
// their tools. A refusal leaves the server waiting, and is not asked
// again on this connection (nexus mcp trust approves it); the prompt goes
// on without it. An app's client is asked nothing (policy.MayAnswer): the
// servers it passed wait for the person, as entries of the project's
// files do (the editor, nexus mcp trust).
func (c *conn) approveServers(ctx context.Context, s *session) {
	if len(s.servers) == 0 || c.opts.Hub == nil {
		return
	}
	if err := policy.MayAnswer(c.opts.Party); err != nil {
		c.logger.Info("ACP: the MCP servers an app's client passed wait for the person's approval (nexus mcp trust)",
			"servers", strings.Join(s.servers, ","), "party", c.opts.Party.String())
		return
	}
	want := map[string]bool{}
	for _, name := range s.servers {
		want[name] = true
	}
	var waiting []string
	for _, st := range c.opts.Hub.Servers() {
		if !want[st.Name] || st.Session != c.key {
			continue
		}
		if st.State == mcp.StatePendingApproval {
			c.mu.Lock()
			seen := c.asked[st.Name] == st.Pin
			if c.asked == nil {
				c.asked = map[string]string{}
			}
			c.asked[st.Name] = st.Pin
			c.mu.Unlock()
			if seen || !c.askServer(ctx, s, st) {
				continue
			}
		}
		waiting = append(waiting, st.Name)
	}
	for len(waiting) > 0 && ctx.Err() == nil {
		states := map[string]string{}
		for _, st := range c.opts.Hub.Servers() {
			states[st.Name] = st.State
		}
		waiting = slices.DeleteFunc(waiting, func(name string) bool {
			switch states[name] {
			case mcp.StateReady, mcp.StateFailed, mcp.StateDisabled, mcp.StateNeedsAuth, mcp.StatePendingApproval, "":
				return true
			}
			return false
		})
		if len(waiting) > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// askServer asks whether to start st; it reports whether it was approved.
func (c *conn) askServer(ctx context.Context, s *session, st mcp.Status) bool {
	l := st.Launch
	what := l.URL
	if st.Transport != "http" {
		what = strings.TrimSpace(l.Command + " " + strings.Join(l.Args, " "))
	}
	var env []string
	for _, k := range slices.Sorted(maps.Keys(l.Env)) {
		env = append(env, k+"="+l.Env[k])
	}
	text := fmt.Sprintf("Start the MCP server %q that the editor passed to this session?\n\n%s: %s", st.Name, st.Transport, what)
	if len(env) > 0 {
		text += "\nenvironment: " + strings.Join(env, " ")
	}
	if len(l.Headers) > 0 {
		text += "\nheaders: " + strings.Join(slices.Sorted(maps.Keys(l.Headers)), ", ")
	}
	text += "\n\nIts tools become the agent's. An approval is remembered for these exact values (nexus mcp ls shows it)."
	kind := acpsdk.ToolKindExecute
	status := acpsdk.ToolCallStatusPending
	title := "Start MCP server " + st.Name
	resp, err := c.peer.RequestPermission(ctx, acpsdk.RequestPermissionRequest{
		SessionId: acpsdk.SessionId(s.id),
		ToolCall: acpsdk.ToolCallUpdate{ToolCallId: acpsdk.ToolCallId("mcp-server-" + st.Name), Title: &title, Kind: &kind, Status: &status,
			Content: []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(text))}},
		Options: []acpsdk.PermissionOption{
			{OptionId: "allow_always", Name: "Approve and start", Kind: acpsdk.PermissionOptionKindAllowAlways},
			{OptionId: "reject_once", Name: "Don't start", Kind: acpsdk.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil {
		c.logger.Warn("ACP: the client was not asked to approve an MCP server", "server", st.Name, "error", err.Error())
		return false
	}
	if resp.Outcome.Selected == nil || resp.Outcome.Selected.OptionId != "allow_always" {
		c.logger.Info("ACP: the person did not approve an MCP server; it waits", "server", st.Name)
		return false
	}
	if _, err := c.opts.Hub.Trust(c.opts.Party, st.Name, st.Pin); err != nil {
		c.logger.Warn("ACP: an MCP server the person approved was not trusted", "server", st.Name, "error", err.Error())
		return false
	}
	return true
}
