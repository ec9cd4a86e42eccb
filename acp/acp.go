// Package acp serves the Nexus agent over the Agent Client Protocol
// (https://agentclientprotocol.com): nexusd acp, for Zed, the JetBrains
// IDEs, Neovim and the other editors that host agents over ACP. It is a
// thin door onto the agent core ([agent.Service]), the same sessions the
// editor, the terminal and gRPC use; every tool call of a session is a
// Nexus tool call, validated, decided by the policy, audited and published
// on the bus, whichever door started it.
//
// What the client offers is used: its permission prompt
// (session/request_permission) answers the policy's questions, its
// fs/read_text_file and fs/write_text_file read and write the files
// outside the definitions root (unsaved buffers are read, edits land in
// the editor), its terminals run execute_command when acp.terminal is
// "client", and the MCP servers it passes to session/new join the session
// through the McpHub, once the person approves them.
//
// Start with [Serve].
package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/gateway"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/workspace"
)

// Hub is what the door needs of the McpHub: the servers a client brings
// to its sessions, and their approval. *mcp.Hub is one.
type Hub interface {
	SetSessionServers(key string, cfgs map[string]mcp.ServerConfig) error
	Servers() []mcp.Status
	Trust(by access.Party, name, pin string) (mcp.Status, error)
}

// Options configure [Serve].
type Options struct {
	Agent *agent.Service
	// Hub takes the MCP servers the client passes to session/new; nil
	// refuses them.
	Hub    Hub
	Config *workspace.Config
	// Workspace is the workspace root (absolute): a session's cwd is it or
	// inside it.
	Workspace string
	// Party is who the client acts for: the person, or an app (its token).
	Party access.Party
	// Registry tells the daemon which sessions may use a connection's MCP
	// servers; nil makes a private one.
	Registry *Registry
	Version  string
	Logger   *slog.Logger
	// Getenv reads the API keys' variables, to say which one is missing;
	// default os.LookupEnv.
	Getenv func(string) (string, bool)
}

// maxLine bounds an ACP message: the Go SDK's reader stops at 10 MiB, and
// a longer line would end the connection there.
const maxLine = 10<<20 - 1

// Serve serves one ACP client on in and out (newline-delimited JSON-RPC
// 2.0) until the client goes or ctx ends. A line that is not a JSON-RPC
// message is answered with -32700 or -32600 and the connection goes on.
// When it ends, the prompts it started are cancelled and the MCP servers
// its client brought are stopped.
func Serve(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	if opts.Registry == nil {
		opts.Registry = NewRegistry()
	}
	if opts.Config == nil {
		opts.Config = workspace.DefaultConfig()
	}
	ws, err := filepath.Abs(opts.Workspace)
	if err != nil {
		return err
	}
	opts.Workspace = ws
	gin, gout := gateway.GuardLinesWith(in, out, gateway.LineRules{MaxLine: maxLine, NoBatches: true})
	c := &conn{opts: opts, logger: opts.Logger, key: opts.Registry.open(), sessions: map[string]*session{}}
	defer c.close()
	// The connection reads at once; nothing is read until c.peer is set,
	// which the handlers use.
	ready := make(chan struct{})
	c.peer = acpsdk.NewAgentSideConnection(c, gout, readAfter{ready, gin})
	c.peer.SetLogger(opts.Logger)
	close(ready)
	// A command file added, changed or removed reaches the client's
	// sessions as an available_commands_update, sent from a goroutine of
	// its own: a slow client holds no other door up.
	defer opts.Agent.WatchCommands(func() { go c.resendCommands() })()
	select {
	case <-ctx.Done():
	case <-c.peer.Done():
	}
	return nil
}

// readAfter reads r once ready is closed.
type readAfter struct {
	ready <-chan struct{}
	r     io.Reader
}

func (r readAfter) Read(p []byte) (int, error) {
	<-r.ready
	return r.r.Read(p)
}

// conn is one client's connection: the agent side of ACP.
type conn struct {
	opts   Options
	logger *slog.Logger
	peer   *acpsdk.AgentSideConnection
	// key names the connection in the hub and the registry.
	key string

	mu       sync.Mutex
	caps     acpsdk.ClientCapabilities
	sessions map[string]*session // opened here: new, load, resume
	// servers are the MCP servers the client brought, by name, for the
	// sessions of this connection.
	servers map[string]mcp.ServerConfig
	// asked are the servers the person was asked about, with the pin
	// they were shown: a refusal is not asked again at every prompt.
	asked  map[string]string
	closed bool

	// commandsMu serialises the sending of the special commands;
	// sentCommands is the list sent last (commandsKey).
	commandsMu   sync.Mutex
	sentCommands string
}

// session is a session open on this connection.
type session struct {
	id   string
	cwd  string
	mode atomic.Value // policy.Mode
	// servers are the names of the MCP servers the client passed for it.
	servers []string
}

func (s *session) currentMode() policy.Mode {
	m, _ := s.mode.Load().(policy.Mode)
	if m == "" {
		return policy.ModeDefault
	}
	return m
}

// close cancels the connection's prompts and stops its MCP servers.
func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	ids := make([]string, 0, len(c.sessions))
	for id := range c.sessions {
		ids = append(ids, id)
	}
	hadServers := len(c.servers) > 0
	c.mu.Unlock()
	for _, id := range ids {
		c.opts.Agent.Cancel(c.opts.Party, id)
	}
	if hadServers && c.opts.Hub != nil {
		if err := c.opts.Hub.SetSessionServers(c.key, nil); err != nil {
			c.logger.Warn("ACP: the MCP servers of a closed connection were not stopped", "error", err.Error())
		}
	}
	c.opts.Registry.close(c.key)
}

func (c *conn) clientCaps() acpsdk.ClientCapabilities {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.caps
}

// Initialize negotiates the protocol version and says what Nexus offers.
func (c *conn) Initialize(ctx context.Context, req acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	c.mu.Lock()
	c.caps = req.ClientCapabilities
	c.mu.Unlock()
	if req.ClientInfo != nil {
		c.logger.Info("ACP client connected", "client", req.ClientInfo.Name, "version", req.ClientInfo.Version,
			"protocol", int(req.ProtocolVersion), "fs.read", req.ClientCapabilities.Fs.ReadTextFile,
			"fs.write", req.ClientCapabilities.Fs.WriteTextFile, "terminal", req.ClientCapabilities.Terminal)
	}
	version := acpsdk.ProtocolVersion(acpsdk.ProtocolVersionNumber)
	if req.ProtocolVersion < version {
		version = req.ProtocolVersion // the client's, if older: it decides whether to go on
	}
	title := "Nexus"
	resp := acpsdk.InitializeResponse{
		ProtocolVersion: version,
		AgentInfo:       &acpsdk.Implementation{Name: "nexus", Title: &title, Version: c.opts.Version},
		AgentCapabilities: acpsdk.AgentCapabilities{
			LoadSession: true,
			// Images when the default profile's model takes them (a
			// session may switch with /model: its prompt then says why
			// an image is refused); audio never, no adapter sends it.
			PromptCapabilities: acpsdk.PromptCapabilities{EmbeddedContext: true, Image: c.defaultTakesImages()},
			McpCapabilities:    acpsdk.McpCapabilities{Http: c.opts.Hub != nil},
			SessionCapabilities: acpsdk.SessionCapabilities{
				List:   &acpsdk.SessionListCapabilities{},
				Resume: &acpsdk.SessionResumeCapabilities{},
				Close:  &acpsdk.SessionCloseCapabilities{},
			},
		},
		AuthMethods: []acpsdk.AuthMethod{},
	}
	if m, ok := c.authMethod(); ok {
		resp.AuthMethods = append(resp.AuthMethods, m)
	}
	return resp, nil
}

// defaultTakesImages reports whether the model of the profile a new
// session uses takes images with a prompt.
func (c *conn) defaultTakesImages() bool {
	p, err := c.opts.Agent.DefaultProfile()
	return err == nil && p.TakesImages()
}

// missingKey is the variable the default profile reads its API key from
// when it is not set, and the profile; ok is false when nothing is
// missing.
func (c *conn) missingKey() (env, profile string, ok bool) {
	p, err := c.opts.Agent.DefaultProfile()
	if err != nil {
		return "", "", false
	}
	env = p.APIKeyEnv
	if env == "" {
		env = llm.DefaultKeyEnv(p.Provider)
	}
	if env == "" {
		return "", "", false
	}
	if v, set := c.opts.Getenv(env); set && strings.TrimSpace(v) != "" {
		return "", "", false
	}
	return env, p.Name, true
}

const authMethodPrefix = "env:"

// authMethod is the authentication method of a missing API key: it says
// which variable to set.
func (c *conn) authMethod() (acpsdk.AuthMethod, bool) {
	env, profile, ok := c.missingKey()
	if !ok {
		return acpsdk.AuthMethod{}, false
	}
	desc := fmt.Sprintf("The llm profile %q reads its API key from %s, which is not set. Set it in the environment of the agent server "+
		"(Zed: \"env\" of agent_servers.nexus; JetBrains: \"env\" in acp.json) and start the agent again.", profile, env)
	return acpsdk.AuthMethod{Agent: &acpsdk.AuthMethodAgent{Id: authMethodPrefix + env, Name: "Set " + env, Description: &desc}}, true
}

// Authenticate succeeds when the variable the method names is set.
func (c *conn) Authenticate(ctx context.Context, req acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	env, ok := strings.CutPrefix(req.MethodId, authMethodPrefix)
	if !ok || env == "" {
		return acpsdk.AuthenticateResponse{}, invalidParams("unknown authentication method %q: Nexus's methods are %q followed by a variable name", req.MethodId, authMethodPrefix)
	}
	if v, set := c.opts.Getenv(env); set && strings.TrimSpace(v) != "" {
		return acpsdk.AuthenticateResponse{}, nil
	}
	return acpsdk.AuthenticateResponse{}, &acpsdk.RequestError{Code: -32000, Message: fmt.Sprintf(
		"%s is not set in the environment of the Nexus daemon: set it there (the agent server's \"env\" in the editor's settings) and start the agent again", env)}
}

// invalidParams is a -32602 error with a message that says what was wrong.
func invalidParams(format string, a ...any) *acpsdk.RequestError {
	return &acpsdk.RequestError{Code: -32602, Message: fmt.Sprintf(format, a...)}
}

// requestError is the JSON-RPC error of an error of the agent core.
func requestError(err error) error {
	var re *acpsdk.RequestError
	var lialInit *agent.LIALInitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		return re
	case errors.Is(err, agent.ErrNoSession):
		return &acpsdk.RequestError{Code: -32002, Message: err.Error()} // ACP's "resource not found"
	case errors.As(err, &lialInit) && errors.Is(err, llm.ErrMissingKey):
		return &acpsdk.RequestError{Code: -32000, Message: "Authentication required: " + err.Error()}
	case errors.As(err, new(*agent.PromptError)):
		return invalidParams("%s", err.Error())
	case errors.Is(err, agent.ErrBusy):
		return &acpsdk.RequestError{Code: -32600, Message: err.Error()}
	}
	return &acpsdk.RequestError{Code: -32603, Message: err.Error()}
}
