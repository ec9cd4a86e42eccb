// Package mcp is the McpHub: it connects the MCP servers a workspace
// configures and serves their tools through the [tools.Manager] like core
// tools: listed, validated, permission-checked, executed, streamed and
// audited. It supervises the servers (restart with backoff, failed after
// repeated crashes), keeps their tool lists current, and lists and reads
// their resources and prompts, each read a call of the party that reads
// ([Hub.As], reads.go). As an MCP client it offers the workspace as
// the servers' root (session.go), resumes the Streamable HTTP streams they
// close while seeing a dead one at once (resume.go), passes on their log
// messages (notify.go), and holds resource subscriptions and publishes
// what they say changed (resources.go).
//
// A server runs only once the person has approved its entry ([Hub.Trust]),
// pinned to its launch values ([Launch]): until then, and again after its
// command, args, env or url change, it waits in state pending_approval.
//
// Start with [New], [Hub.Apply] the servers of [LoadConfig], and
// [Hub.Watch] the configuration files. A session of an editor may bring
// servers of its own ([Hub.SetSessionServers]), which run beside them.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/trust"
)

// States of a server.
const (
	StateStarting = "starting"
	StateReady    = "ready"
	StateFailed   = "failed"
	StateDisabled = "disabled"
	// StatePendingApproval is a server whose entry the person has not
	// approved (or not as it is now): it is not started.
	StatePendingApproval = "pending_approval"
	// StateNeedsAuth is a server that waits for the person to sign in
	// (oauth.go): its tools are unavailable until then.
	StateNeedsAuth = "needs_auth"
)

// Status is the state of one server. The hub publishes a Status on the bus
// at every change.
type Status struct {
	Name      string
	State     string
	Transport string
	Source    string
	Tools     int
	// Error is the last error: why the server failed, or why it is
	// restarting.
	Error    string
	Restarts int
	Since    time.Time
	Lazy     bool
	// Unprefixed is the entry's "unprefixed" (see [ServerConfig]).
	Unprefixed bool
	// PID is the process of a running stdio server, else 0.
	PID int
	// Launch is what the entry runs, and Pin its hash: what the person
	// approves. Trusted is true when they approved this pin.
	Launch  Launch
	Pin     string
	Trusted bool
	// Session is the key of the session that brought the server
	// ([Hub.SetSessionServers]); "" for a server of the configuration
	// files.
	Session string
}

// Options configure a Hub. Zero values get the defaults of the mcp section
// of the config.
type Options struct {
	Workspace string
	Tools     *tools.Manager
	Bus       *events.Bus
	Logger    *slog.Logger
	// CallTimeout (default 60s) and StartupTimeout (default 30s) apply to
	// servers that do not set their own.
	CallTimeout    time.Duration
	StartupTimeout time.Duration
	// Restart is "always", "on-failure" (default) or "never"; a server
	// that exits more than MaxRestarts (default 5) times in a row is failed.
	// (No restarts at all is Restart "never".)
	Restart     string
	MaxRestarts int
	// OutputLimit bounds the content of a tool result, in bytes (default
	// 1 MiB); a larger result is cut with code output_limit.
	OutputLimit int
	// BlobDir receives images and binary resources, which results refer to
	// by path (default <workspace>/.nexus/mcp/blobs).
	BlobDir string
	// Parallel bounds how many servers start at once (default 4).
	Parallel int
	// BaseEnv names the daemon's environment variables every stdio server
	// gets (default PATH, HOME, USER, LOGNAME, LANG, LC_ALL, TMPDIR, TERM).
	BaseEnv []string
	Version string
	// TrustFile keeps the person's approvals (default [TrustFile] of the
	// workspace). A file that cannot be read trusts nothing: every server
	// waits, and approving says why it cannot be recorded.
	TrustFile string
	// LogLevel is the daemon's log level (default info): servers are
	// asked for the MCP level that matches it.
	LogLevel slog.Level
	// HTTPTransport carries the requests to HTTP servers (default
	// http.DefaultTransport).
	HTTPTransport http.RoundTripper
	// AuthDir keeps the OAuth tokens of the servers the person signed in to
	// (default [AuthDir] of the workspace); LoginTimeout bounds a sign-in
	// (default 5 minutes).
	AuthDir      string
	LoginTimeout time.Duration
	// Elicitation declares the elicitation capability (form and url modes)
	// and puts servers' questions to the person through Tools (see
	// elicit.go); ElicitTimeout bounds the wait for an answer (default 10
	// minutes).
	Elicitation   bool
	ElicitTimeout time.Duration
	// Sampling, when set, declares the sampling capability and answers
	// servers' sampling requests with a model, once the person approves
	// (see sampling.go).
	Sampling *Sampling
}

// ErrUnknownServer is the error for a server name that is not configured.
var ErrUnknownServer = errors.New("no MCP server of that name is configured")

// Hub runs the configured MCP servers.
type Hub struct {
	opts   Options
	logger *slog.Logger
	sem    chan struct{}

	trust    *TrustStore
	trustErr error // why the trust file could not be read

	mu      sync.Mutex
	servers map[string]*server
	// files are the servers of the configuration files (Apply), and
	// sessions those each session brings (SetSessionServers), by session
	// key: together, the servers that should run.
	files    map[string]ServerConfig
	sessions map[string]map[string]ServerConfig
	closed   bool
	loaded   string // the snapshot of the configuration files of the last Reload
	// asking is the person's asker of approvals of servers that wait
	// (SetTrustAsker).
	asking trust.Asking[Status]

	// progress maps a progress token (the tool call id) to the call's
	// progress function.
	progress sync.Map
	// subs are the resource subscriptions (resources.go).
	subs subscriptions
	// inflight are the calls running on each server, to tell which call a
	// server's question belongs to.
	inflight inflight
}

// New returns a hub with no servers.
func New(opts Options) *Hub {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 60 * time.Second
	}
	if opts.StartupTimeout <= 0 {
		opts.StartupTimeout = 30 * time.Second
	}
	if opts.Restart == "" {
		opts.Restart = "on-failure"
	}
	if opts.MaxRestarts <= 0 {
		opts.MaxRestarts = 5
	}
	if opts.OutputLimit <= 0 {
		opts.OutputLimit = 1 << 20
	}
	if opts.BlobDir == "" {
		opts.BlobDir = filepath.Join(opts.Workspace, ".nexus", "mcp", "blobs")
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 4
	}
	if opts.BaseEnv == nil {
		opts.BaseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR", "TERM"}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Bus == nil {
		opts.Bus = events.New()
	}
	if opts.TrustFile == "" {
		opts.TrustFile = TrustFile(opts.Workspace)
	}
	if opts.HTTPTransport == nil {
		opts.HTTPTransport = http.DefaultTransport
	}
	if opts.AuthDir == "" {
		opts.AuthDir = AuthDir(opts.Workspace)
	}
	if opts.LoginTimeout <= 0 {
		opts.LoginTimeout = 5 * time.Minute
	}
	if opts.ElicitTimeout <= 0 {
		opts.ElicitTimeout = 10 * time.Minute
	}
	h := &Hub{opts: opts, logger: opts.Logger, sem: make(chan struct{}, opts.Parallel), servers: map[string]*server{},
		sessions: map[string]map[string]ServerConfig{}}
	h.trust, h.trustErr = OpenTrustStore(opts.TrustFile)
	if h.trustErr != nil {
		h.logger.Error("MCP servers are not trusted: their trust file cannot be read", "error", h.trustErr.Error())
		h.trust = trust.Empty(opts.TrustFile, trustKind)
	}
	if opts.Tools != nil {
		opts.Tools.SetResolver(h.resolve)
	}
	return h
}

// Apply makes the servers of the configuration files those of cfgs: it
// starts the new ones, stops the removed ones, and restarts the ones whose
// configuration changed. Servers whose configuration is unchanged go on
// undisturbed, and so do the servers sessions brought
// ([Hub.SetSessionServers]): while a session has a server of a name, an
// entry of that name in cfgs is ignored.
func (h *Hub) Apply(cfgs map[string]ServerConfig) {
	h.reconcile(func() error {
		for _, name := range sortedNames(cfgs) {
			if key := h.ownerLocked(name); key != "" {
				h.logger.Warn("MCP server entry ignored: a session brought a server of that name", "server", name,
					"source", cfgs[name].Source, "session", key)
			}
		}
		h.files = maps.Clone(cfgs)
		return nil
	})
}

// SetSessionServers sets the servers that session key brings, besides
// those of the configuration files: they wait for the person's approval
// and start like any entry (their Source, given in cfgs, says where they
// come from: "ACP client (session KEY)"), their tools register as any
// server's, and [Hub.Reload] keeps them. A relative Cwd is relative to the
// workspace, and none is the workspace. nil or empty cfgs removes them:
// they are stopped and their tools unregistered before it returns.
//
// A name already used by a file entry or by another session's server (a
// name the session has already stays its own), or an entry that cannot
// run (no name, a name with "/" or white space, no command or URL), is an
// error naming it, and nothing changes.
func (h *Hub) SetSessionServers(key string, cfgs map[string]ServerConfig) error {
	if key == "" {
		return errors.New("MCP session servers: the session key is empty")
	}
	set := make(map[string]ServerConfig, len(cfgs))
	for _, name := range sortedNames(cfgs) {
		c, err := h.sessionConfig(name, cfgs[name])
		if err != nil {
			return err
		}
		set[name] = c
	}
	return h.reconcile(func() error {
		if h.closed && len(set) > 0 {
			return errors.New("MCP session servers: the hub is closed")
		}
		for _, name := range sortedNames(set) {
			owner := h.ownerLocked(name)
			if owner == key {
				continue // its own, even if a file entry of that name came since
			}
			if c, ok := h.files[name]; ok {
				return fmt.Errorf("MCP server %q: the name is already used by the entry in %s", name, c.Source)
			}
			if owner != "" {
				return fmt.Errorf("MCP server %q: the name is already used by another session's server", name)
			}
		}
		if len(set) == 0 {
			delete(h.sessions, key)
		} else {
			h.sessions[key] = set
		}
		return nil
	})
}

// sessionConfig checks a server a session brings and fills in its name
// and working directory.
func (h *Hub) sessionConfig(name string, c ServerConfig) (ServerConfig, error) {
	switch {
	case name == "":
		return c, errors.New("MCP session servers: a server has no name")
	case strings.ContainsFunc(name, func(r rune) bool { return r == '/' || unicode.IsSpace(r) }):
		return c, fmt.Errorf(`MCP server %q: the name must not contain "/" or white space (tools are named server/tool)`, name)
	case c.Name != "" && c.Name != name:
		return c, fmt.Errorf("MCP server %q: its entry names it %q", name, c.Name)
	case c.Transport == "stdio" && c.Command == "":
		return c, fmt.Errorf("MCP server %q: a stdio server needs a command", name)
	case c.Transport == "http" && c.URL == "":
		return c, fmt.Errorf("MCP server %q: an http server needs a URL", name)
	case c.Transport != "stdio" && c.Transport != "http":
		return c, fmt.Errorf("MCP server %q: transport %q is not stdio or http", name, c.Transport)
	}
	c.Name = name
	if c.Transport == "stdio" {
		root := absWorkspace(h.opts.Workspace)
		switch {
		case c.Cwd == "":
			c.Cwd = root
		case !filepath.IsAbs(c.Cwd):
			c.Cwd = filepath.Join(root, c.Cwd)
		}
	}
	return c, nil
}

// OwnerOf is the key of the session that brought server name; "" for a
// server of the configuration files, or a name no one brought.
func (h *Hub) OwnerOf(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ownerLocked(name)
}

func (h *Hub) ownerLocked(name string) string {
	for key, cfgs := range h.sessions {
		if _, ok := cfgs[name]; ok {
			return key
		}
	}
	return ""
}

// wanted is a server that should run, and the session that brought it
// ("" for the files).
type wanted struct {
	cfg   ServerConfig
	owner string
}

// wantLocked is the servers that should run: the files' and the
// sessions'; a session's server takes its name from a file entry. The
// caller holds h.mu.
func (h *Hub) wantLocked() map[string]wanted {
	want := make(map[string]wanted, len(h.files))
	for name, c := range h.files {
		want[name] = wanted{cfg: c}
	}
	for key, cfgs := range h.sessions {
		for name, c := range cfgs {
			want[name] = wanted{cfg: c, owner: key}
		}
	}
	return want
}

// reconcile runs change, which returns an error to change nothing, and
// makes the running servers those that should run then: it starts the
// new ones, stops the removed ones, and restarts the ones whose
// configuration or owner changed. It returns change's error.
func (h *Hub) reconcile(change func() error) error {
	h.mu.Lock()
	if err := change(); err != nil || h.closed {
		h.mu.Unlock()
		return err
	}
	want := h.wantLocked()
	var stopping []*server
	for _, name := range sortedNames(h.servers) {
		s := h.servers[name]
		w, ok := want[name]
		switch {
		case !ok:
			h.logger.Info("MCP server removed", "server", name, "source", s.cfg.Source)
		case !sameConfig(s.cfg, w.cfg) || s.owner != w.owner:
			h.logger.Info("MCP server configuration changed: restarting it", "server", name, "source", w.cfg.Source)
		default:
			continue
		}
		stopping = append(stopping, s)
	}
	h.mu.Unlock()
	// Stopping may take seconds; the hub answers meanwhile, still listing
	// the servers being stopped. They are gone, their tools unregistered,
	// before their successors start.
	var wg sync.WaitGroup
	for _, s := range stopping {
		wg.Go(s.close)
	}
	wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range stopping {
		if h.servers[s.cfg.Name] == s {
			delete(h.servers, s.cfg.Name)
			h.asking.Forget(s.cfg.Name) // its successor is asked about afresh
		}
	}
	if h.closed {
		return nil
	}
	// What should run now: another change may have come meanwhile.
	want = h.wantLocked()
	for _, name := range sortedNames(want) {
		if _, ok := h.servers[name]; !ok {
			s := h.start(want[name].cfg, want[name].owner)
			h.servers[name] = s
			h.askLocked(s)
		}
	}
	return nil
}

// Servers returns the status of every configured server, sorted by name.
func (h *Hub) Servers() []Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Status, 0, len(h.servers))
	for _, name := range sortedNames(h.servers) {
		out = append(out, h.servers[name].statusNow())
	}
	return out
}

// Restart stops a server and starts it again: a failed server gets a new
// series of attempts, and a lazy one starts.
func (h *Hub) Restart(name string) error {
	s, err := h.server(name)
	if err != nil {
		return err
	}
	if !s.cfg.Enabled {
		return fmt.Errorf("MCP server %q is disabled in %s", name, s.cfg.Source)
	}
	if s.cfg.Err != nil {
		return fmt.Errorf("MCP server %q cannot start: %v", name, s.cfg.Err)
	}
	if s.statusNow().State == StatePendingApproval {
		return errors.New(s.pendingMessage())
	}
	s.restart()
	return nil
}

// Close stops every server.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	h.asking.Stop()
	servers := h.servers
	h.servers = map[string]*server{}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.close)
	}
	wg.Wait()
}

func (h *Hub) server(name string) (*server, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.servers[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	return s, nil
}

// resolve is the manager's resolver: it starts a lazy server on its first
// use and waits until it is ready or has failed. A call to a server that
// waits for the person's approval fails, saying so: it never starts one.
func (h *Hub) resolve(ctx context.Context, name string) error {
	s, err := h.server(name)
	if err != nil || !s.cfg.Enabled || s.cfg.Err != nil {
		return nil
	}
	if s.statusNow().State == StatePendingApproval {
		return s.pendingError()
	}
	s.wake()
	s.waitSettled(ctx)
	return nil
}

// ready returns the ready servers among name ("" = all).
func (h *Hub) ready(name string) ([]*server, error) {
	if name != "" {
		s, err := h.server(name)
		if err != nil {
			return nil, err
		}
		switch st := s.statusNow(); st.State {
		case StateReady:
		case StatePendingApproval:
			return nil, errors.New(s.pendingMessage())
		default:
			return nil, fmt.Errorf("MCP server %q is %s%s", name, st.State, errorSuffix(st.Error))
		}
		return []*server{s}, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*server
	for _, n := range sortedNames(h.servers) {
		if s := h.servers[n]; s.statusNow().State == StateReady {
			out = append(out, s)
		}
	}
	return out, nil
}

func errorSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// sameConfig reports whether two configurations of a server would run the
// same thing.
func sameConfig(a, b ServerConfig) bool {
	errText := func(e error) string {
		if e == nil {
			return ""
		}
		return e.Error()
	}
	ea, eb := errText(a.Err), errText(b.Err)
	a.Err, b.Err = nil, nil
	return ea == eb && reflect.DeepEqual(a, b)
}
