package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/internal/proctree"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// server supervises one configured MCP server: it connects, keeps its
// tools registered while it is ready, and restarts it with backoff when it
// dies.
type server struct {
	hub *Hub
	cfg ServerConfig
	// owner is the key of the session that brought the server, "" for the
	// configuration files.
	owner string
	pin   string // of cfg.Launch()
	// auth authorizes the requests of an http server (oauth.go); nil for
	// stdio.
	auth *serverAuth

	life        context.Context // ends when the server is closed
	approved    chan struct{}   // closed once the person approved the entry
	approveOnce sync.Once

	mu      sync.Mutex
	status  Status
	session *mcp.ClientSession
	alive   context.Context // ends when the session does; calls follow it
	heard   *heard          // the session's notifications that calls wait for
	hashes  map[string]string
	settled chan struct{} // closed and replaced at every settled state

	logs logLimiter // of its log messages (notify.go)

	wakeCh    chan struct{} // starts a lazy server
	restartCh chan struct{}
	refreshCh chan struct{} // the tool list changed
	stop      context.CancelFunc
	done      chan struct{}
}

// errServerGone is the cause of a call's end when its server died.
var errServerGone = errors.New("the MCP server ended")

// start supervises a server of the configuration; the caller holds h.mu.
// A server whose entry the person has not approved waits in state
// pending_approval, and runs nothing until [Hub.Trust].
func (h *Hub) start(cfg ServerConfig, owner string) *server {
	ctx, stop := context.WithCancel(context.Background())
	launch := cfg.Launch()
	s := &server{
		hub: h, cfg: cfg, owner: owner, pin: launch.Pin(), life: ctx, approved: make(chan struct{}),
		hashes: map[string]string{}, settled: make(chan struct{}),
		wakeCh: make(chan struct{}, 1), restartCh: make(chan struct{}, 1), refreshCh: make(chan struct{}, 1),
		stop: stop, done: make(chan struct{}),
		status: Status{Name: cfg.Name, Transport: cfg.Transport, Source: cfg.Source, Lazy: cfg.Lazy, Unprefixed: cfg.Unprefixed, Since: time.Now(), Launch: launch,
			Session: owner},
	}
	s.status.Pin = s.pin
	s.auth = newServerAuth(h, cfg)
	s.status.Trusted = cfg.Err == nil && h.trust.Trusted(cfg.Name, s.pin)
	if s.status.Trusted {
		s.approveOnce.Do(func() { close(s.approved) })
	}
	switch {
	case !cfg.Enabled:
		s.status.State = StateDisabled
	case cfg.Err != nil:
		s.status.State, s.status.Error = StateFailed, cfg.Err.Error()
	case !s.status.Trusted:
		s.status.State, s.status.Error = StatePendingApproval, s.pendingMessage()
		if h.trustErr != nil {
			s.status.Error += "; the trust file cannot be read: " + h.trustErr.Error()
		}
		h.logger.Warn("MCP server entry is new or changed: it waits for the person's approval", "server", cfg.Name,
			"source", cfg.Source, "approve", "nexus mcp trust "+cfg.Name)
	case cfg.Lazy:
		s.status.State = StateDisabled
	default:
		s.status.State = StateStarting
	}
	h.opts.Bus.Publish(s.status)
	go s.run(ctx)
	return s
}

func (s *server) statusNow() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// setStatus changes the status, publishes it, and wakes those waiting for a
// settled state.
func (s *server) setStatus(fn func(*Status)) {
	s.mu.Lock()
	old := s.status
	fn(&s.status)
	if s.status.State != old.State {
		s.status.Since = time.Now()
	}
	st := s.status
	if st.State != StateStarting {
		close(s.settled)
		s.settled = make(chan struct{})
	}
	s.mu.Unlock()
	s.hub.opts.Bus.Publish(st)
	if st.State != old.State || st.Error != old.Error {
		s.hub.logger.Info("MCP server "+st.State, "server", st.Name, "tools", st.Tools, "error", st.Error, "restarts", st.Restarts)
	}
}

// waitSettled waits until the server is not starting, and returns its state.
func (s *server) waitSettled(ctx context.Context) string {
	timeout := time.NewTimer(s.startupTimeout() + time.Second)
	defer timeout.Stop()
	for {
		s.mu.Lock()
		st, ch := s.status.State, s.settled
		s.mu.Unlock()
		if st != StateStarting && !(st == StateDisabled && s.cfg.Lazy) {
			return st
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return st
		case <-timeout.C:
			return st
		}
	}
}

func (s *server) wake() {
	select {
	case s.wakeCh <- struct{}{}:
	default:
	}
}

func (s *server) restart() {
	select {
	case s.restartCh <- struct{}{}:
	default:
	}
}

// approve ends the wait of a server for the person's approval: it starts
// (a lazy one waits for its first call).
func (s *server) approve() {
	s.approveOnce.Do(func() {
		close(s.approved)
		s.setStatus(func(st *Status) {
			st.Trusted = true
			if st.State != StatePendingApproval {
				return
			}
			st.State, st.Error = StateStarting, ""
			if s.cfg.Lazy {
				st.State = StateDisabled
			}
		})
	})
}

// close stops the server and unregisters its tools; it returns when both
// are done.
func (s *server) close() {
	s.stop()
	<-s.done
}

func (s *server) startupTimeout() time.Duration {
	if s.cfg.StartupTimeout > 0 {
		return s.cfg.StartupTimeout
	}
	return s.hub.opts.StartupTimeout
}

func (s *server) callTimeout() time.Duration {
	if s.cfg.CallTimeout > 0 {
		return s.cfg.CallTimeout
	}
	return s.hub.opts.CallTimeout
}

// run is the supervisor loop.
func (s *server) run(ctx context.Context) {
	defer close(s.done)
	defer s.unregisterAll()
	if s.cfg.Err != nil || !s.cfg.Enabled {
		<-ctx.Done()
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-s.approved:
	}
	if s.cfg.Lazy {
		select {
		case <-ctx.Done():
			return
		case <-s.wakeCh:
		case <-s.restartCh:
		}
		s.setStatus(func(st *Status) { st.State, st.Error = StateStarting, "" })
	}
	crashes := 0
	for {
		upFor, clean, lastErr := s.runSession(ctx)
		if ctx.Err() != nil {
			return
		}
		if s.auth.authFailure(lastErr) { // for the person to sign in: no restarts
			if !s.awaitSignIn(ctx, lastErr) {
				return
			}
			crashes = 0
			continue
		}
		if lastErr == nil { // a restart was asked for
			crashes = 0
			s.setStatus(func(st *Status) { st.State, st.Error, st.Restarts, st.PID = StateStarting, "", st.Restarts+1, 0 })
			continue
		}
		if upFor >= time.Minute {
			crashes = 0 // it worked for a while: a new series
		}
		crashes++
		policy := s.hub.opts.Restart
		give := policy == "never" || (policy == "on-failure" && clean) || crashes > s.hub.opts.MaxRestarts
		if give {
			msg := lastErr.Error()
			if crashes > s.hub.opts.MaxRestarts && policy != "never" && !(policy == "on-failure" && clean) {
				msg = fmt.Sprintf("%s (gave up after %d attempts in a row; nexus mcp restart %s tries again)", msg, crashes, s.cfg.Name)
			}
			s.unregisterAll()
			s.setStatus(func(st *Status) { st.State, st.Error, st.PID = StateFailed, msg, 0 })
			select {
			case <-ctx.Done():
				return
			case <-s.restartCh:
				crashes = 0
				s.setStatus(func(st *Status) { st.State, st.Error, st.Restarts = StateStarting, "", st.Restarts+1 })
				continue
			}
		}
		backoff := min(200*time.Millisecond<<(crashes-1), 30*time.Second)
		s.setStatus(func(st *Status) {
			st.State, st.Error, st.PID = StateStarting, fmt.Sprintf("%v; restarting in %v", lastErr, backoff), 0
		})
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		case <-s.restartCh:
			crashes = 0
		}
		s.setStatus(func(st *Status) { st.Restarts++ })
	}
}

// runSession runs one connection to the server until it ends. It returns
// how long the server was ready, whether it exited cleanly by itself, and
// why the connection ended: nil when a restart was asked for.
func (s *server) runSession(ctx context.Context) (upFor time.Duration, clean bool, err error) {
	s.hub.sem <- struct{}{}
	conn, err := s.connect(ctx)
	<-s.hub.sem
	if err != nil {
		return 0, false, err
	}
	defer conn.close()
	alive, markDead := context.WithCancelCause(context.Background())
	defer markDead(errServerGone)
	s.mu.Lock()
	s.session, s.alive, s.heard = conn.session, alive, conn.heard
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.session, s.alive, s.heard = nil, nil, nil
		s.mu.Unlock()
	}()
	s.connected(ctx, conn.session)
	if err := s.refreshTools(ctx, conn.session); err != nil {
		return 0, false, fmt.Errorf("listing its tools: %w", err)
	}
	readyAt := time.Now()
	s.setStatus(func(st *Status) { st.State, st.Error, st.PID = StateReady, "", conn.pid })
	for {
		select {
		case <-ctx.Done():
			return time.Since(readyAt), false, ctx.Err()
		case <-s.restartCh:
			return time.Since(readyAt), false, nil
		case <-s.refreshCh:
			if err := s.refreshTools(ctx, conn.session); err != nil {
				s.hub.logger.Warn("MCP server's tool list could not be refreshed", "server", s.cfg.Name, "error", err.Error())
			} else {
				s.listChanged(ListTools)
			}
		case <-conn.ended:
			markDead(errServerGone)
			return time.Since(readyAt), conn.cleanExit(), conn.endError()
		case err := <-s.auth.needed():
			return time.Since(readyAt), false, err
		}
	}
}

// A conn is a live connection to a server, with its process for stdio.
type conn struct {
	session *mcp.ClientSession
	pid     int
	ended   <-chan struct{} // closed when the server is gone
	heard   *heard

	cmd     *exec.Cmd
	tree    *proctree.Tree // the server and its children
	exited  chan struct{}
	exitErr error
	stderr  *tailWriter

	live *liveness // of an HTTP server
}

func (c *conn) endError() error {
	if c.cmd == nil {
		return c.live.endError()
	}
	select {
	case <-c.exited:
	case <-time.After(2 * time.Second):
		return errors.New("the server closed its output")
	}
	msg := "the server exited"
	if st := c.cmd.ProcessState; st != nil {
		msg = "the server " + describeExit(st)
	} else if c.exitErr != nil {
		msg += ": " + c.exitErr.Error()
	}
	if tail := c.stderr.tail(); tail != "" {
		msg += "; its last output: " + tail
	}
	return errors.New(msg)
}

func (c *conn) cleanExit() bool {
	if c.cmd == nil {
		return false
	}
	select {
	case <-c.exited:
		return c.cmd.ProcessState != nil && c.cmd.ProcessState.Success()
	default:
		return false
	}
}

// close ends the session; a stdio server gets its input closed, then
// SIGTERM (not on Windows, which has none), then SIGKILL, and its whole
// process tree goes with it.
func (c *conn) close() {
	if c.stderr != nil {
		c.stderr.quiet.Store(true) // what it says while we stop it is noise
	}
	done := make(chan struct{})
	go func() { c.session.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
	}
	if c.cmd == nil {
		return
	}
	defer c.tree.Release()
	for _, stop := range []func() error{c.tree.Terminate, c.tree.Kill} {
		select {
		case <-c.exited:
			c.tree.Kill() // what it left behind
			return
		case <-time.After(2 * time.Second):
			stop()
		}
	}
	<-c.exited
}

// connect starts or reaches the server and initializes a session.
func (s *server) connect(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.startupTimeout())
	defer cancel()
	heard := new(heard)
	opts := &mcp.ClientOptions{
		Logger: s.hub.logger.With("server", s.cfg.Name),
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.refreshCh <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			defer heard.handle()
			if p := req.Params; p != nil {
				if fn, ok := s.hub.progress.Load(fmt.Sprint(p.ProgressToken)); ok {
					fn.(func(float64, float64, string))(p.Progress, p.Total, p.Message)
				}
			}
		},
		// Questions to the person and to the model (elicit.go, sampling.go).
		Capabilities:               s.hub.capabilities(),
		ElicitationHandler:         s.elicitationHandler(),
		ElicitationCompleteHandler: s.elicitationCompleteHandler(),
		CreateMessageHandler:       s.samplingHandler(), //lint:ignore SA1019 servers use sampling until 2026-07-28
	}
	s.listen(opts, heard) // logs, resource updates, list changes (notify.go)
	client := mcp.NewClient(&mcp.Implementation{Name: "nexusd", Title: "Nexus", Version: s.hub.opts.Version}, opts)
	client.AddReceivingMiddleware(specElicitation)
	s.hub.offerRoots(client)
	if s.cfg.Transport == "http" {
		return s.connectHTTP(ctx, client, heard)
	}
	return s.connectStdio(ctx, client, heard)
}

func (s *server) connectHTTP(ctx context.Context, client *mcp.Client, heard *heard) (*conn, error) {
	// Streams the server closes are resumed (resume.go); live sees the
	// server gone.
	live := newLiveness(s.cfg.URL, s.hub.opts.HTTPTransport)
	t := &mcp.StreamableClientTransport{Endpoint: s.cfg.URL,
		HTTPClient: &http.Client{Transport: headerTransport{s.cfg.Headers, wireTransport{live, heard}}}}
	s.auth.attach(t)
	session, err := client.Connect(ctx, t, sessionOptions())
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", s.cfg.URL, err)
	}
	return &conn{session: session, ended: live.until(sessionDone(session)), live: live, heard: heard}, nil
}

type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.next.RoundTrip(r)
}

func (s *server) connectStdio(ctx context.Context, client *mcp.Client, heard *heard) (*conn, error) {
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Dir = s.cfg.Cwd
	cmd.Env = s.environ()
	// Wait closes the pipes at most this long after the server exits,
	// even if a child it left behind holds them open.
	cmd.WaitDelay = 500 * time.Millisecond
	stderr := newTailWriter(s.hub, s.cfg.Name)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// A process tree of its own, so that closing the server takes its
	// children too. If the daemon dies: on Linux the kernel kills the
	// server; on Windows the job's handle closes, which kills its tree;
	// elsewhere the server sees its stdin end, and an MCP server exits
	// then.
	tree, err := proctree.Start(cmd, proctree.Options{})
	if err != nil {
		return nil, fmt.Errorf("starting %q: %w", s.cfg.Command, err)
	}
	c := &conn{cmd: cmd, tree: tree, pid: cmd.Process.Pid, exited: make(chan struct{}), stderr: stderr, heard: heard}
	go func() {
		c.exitErr = cmd.Wait()
		stderr.Flush()
		close(c.exited)
	}()
	session, err := client.Connect(ctx, &mcp.IOTransport{Reader: newWireReader(stdout, heard), Writer: stdin}, sessionOptions())
	if err != nil {
		c.tree.Kill()
		<-c.exited
		c.tree.Release()
		msg := fmt.Sprintf("initializing %q: %v", s.cfg.Command, err)
		if st := cmd.ProcessState; st != nil {
			msg = fmt.Sprintf("%q %s before it answered initialize", s.cfg.Command, describeExit(st))
		}
		if tail := stderr.tail(); tail != "" {
			msg += "; its last output: " + tail
		}
		return nil, errors.New(msg)
	}
	c.session = session
	ended, done := make(chan struct{}), sessionDone(session)
	go func() {
		select {
		case <-c.exited: // at once, even if a child it left keeps the pipes open
		case <-done:
		}
		close(ended)
	}()
	c.ended = ended
	return c, nil
}

func sessionDone(s *mcp.ClientSession) <-chan struct{} {
	ch := make(chan struct{})
	go func() { s.Wait(); close(ch) }()
	return ch
}

// environ is the explicit environment of a stdio server: the base
// variables and those it inherits, from the daemon; then its own.
func (s *server) environ() []string {
	env := map[string]string{}
	for _, name := range append(append([]string{}, s.hub.opts.BaseEnv...), s.cfg.InheritEnv...) {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	for k, v := range s.cfg.Env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for _, k := range sortedNames(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// refreshTools lists the server's tools and makes the registry match: new
// tools are registered, gone ones unregistered, changed ones replaced
// (which voids earlier "always" answers, pinned to the old definition).
func (s *server) refreshTools(ctx context.Context, session *mcp.ClientSession) error {
	ctx, cancel := context.WithTimeout(ctx, s.startupTimeout())
	defer cancel()
	var list []*mcp.Tool
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		list = append(list, t)
	}
	m := s.hub.opts.Tools
	seen := map[string]bool{}
	count := 0
	for _, t := range list {
		if !s.serves(t.Name) || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		def, err := definition(s.cfg.Name, t)
		if err != nil {
			s.hub.logger.Warn("MCP tool skipped", "server", s.cfg.Name, "tool", t.Name, "error", err.Error())
			continue
		}
		hash := policy.DefinitionHash(def)
		s.mu.Lock()
		old, known := s.hashes[t.Name]
		s.mu.Unlock()
		if known && old == hash {
			count++
			continue
		}
		if m != nil {
			if err := m.Replace(tools.Tool{Definition: def, Handler: s.handler(t.Name), Timeout: s.callTimeout(),
				Touches: touches(s.cfg.Transport, def)}); err != nil {
				s.hub.logger.Warn("MCP tool skipped", "server", s.cfg.Name, "tool", t.Name, "error", err.Error())
				continue
			}
		}
		if known {
			s.hub.logger.Warn("MCP tool definition changed: remembered answers for it no longer apply",
				"server", s.cfg.Name, "tool", t.Name, "oldHash", old[:12], "newHash", hash[:12])
		}
		s.mu.Lock()
		s.hashes[t.Name] = hash
		s.mu.Unlock()
		count++
	}
	s.mu.Lock()
	var gone []string
	for name := range s.hashes {
		if !seen[name] {
			gone = append(gone, name)
			delete(s.hashes, name)
		}
	}
	s.mu.Unlock()
	for _, name := range gone {
		if m != nil {
			m.Unregister(s.cfg.Name, name)
		}
	}
	s.setStatus(func(st *Status) { st.Tools = count })
	return nil
}

// serves reports whether the server's allow and deny lists let a tool
// through.
func (s *server) serves(name string) bool {
	for _, p := range s.cfg.DenyTools {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	if len(s.cfg.AllowTools) == 0 {
		return true
	}
	for _, p := range s.cfg.AllowTools {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

func (s *server) unregisterAll() {
	s.mu.Lock()
	names := make([]string, 0, len(s.hashes))
	for n := range s.hashes {
		names = append(names, n)
	}
	s.hashes = map[string]string{}
	s.mu.Unlock()
	if m := s.hub.opts.Tools; m != nil {
		for _, n := range names {
			m.Unregister(s.cfg.Name, n)
		}
	}
	s.setStatus(func(st *Status) { st.Tools = 0 })
}

// current returns the live session and the context that ends with it, or
// an error naming the server's state.
func (s *server) current() (*mcp.ClientSession, context.Context, *tools.Error) {
	session, alive, _, terr := s.calling()
	return session, alive, terr
}

// calling is current with the session's notifications that calls wait
// for (notify.go).
func (s *server) calling() (*mcp.ClientSession, context.Context, *heard, *tools.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil {
		return nil, nil, nil, tools.Errorf(tools.CodeServerUnavailable, "MCP server %q is %s%s", s.cfg.Name, s.status.State, errorSuffix(s.status.Error))
	}
	return s.session, s.alive, s.heard, nil
}

// tailWriter logs a server's stderr line by line and keeps the last lines
// for error messages.
type tailWriter struct {
	hub  *Hub
	name string

	quiet atomic.Bool // log at debug level

	mu    sync.Mutex
	buf   []byte
	lines []string
}

func newTailWriter(h *Hub, name string) *tailWriter { return &tailWriter{hub: h, name: name} }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.line(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 8<<10 { // a very long line: log it in pieces
		w.line(string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// Flush logs a last line without a newline.
func (w *tailWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.line(string(w.buf))
		w.buf = nil
	}
}

func (w *tailWriter) line(l string) {
	l = strings.TrimRight(l, "\r")
	if strings.TrimSpace(l) == "" {
		return
	}
	if w.quiet.Load() {
		w.hub.logger.Debug("MCP server stderr", "server", w.name, "line", l)
	} else {
		w.hub.logger.Info("MCP server stderr", "server", w.name, "line", l)
	}
	w.lines = append(w.lines, l)
	if len(w.lines) > 5 {
		w.lines = w.lines[1:]
	}
}

func (w *tailWriter) tail() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t := strings.Join(w.lines, " | ")
	if len(t) > 1000 {
		t = "…" + t[len(t)-1000:]
	}
	return t
}

var _ io.Writer = (*tailWriter)(nil)
