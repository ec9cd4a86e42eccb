// Package daemon assembles nexusd for one workspace: it takes the
// workspace lock, loads the configuration, opens the stores, serves gRPC,
// publishes .nexus/run/daemon.json, and shuts all of it down in order.
// Start with [Run]; [Open] and [Parts.Serve] are its two halves, for
// whoever builds a daemon (the tests, the bench).
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/acp"
	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/checkpoints"
	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/rpc"
	"github.com/nexuscocreate/nexus/server"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/hooks"
	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/workspace"
)

// Options are the daemon's command-line settings; they override the
// configuration file.
type Options struct {
	Workspace string
	GRPCAddr  string // a TCP address to serve besides the unix socket
	LogFile   string
	LogLevel  string
	Version   string
	// Stderr receives the log when there is no log file.
	Stderr io.Writer
	// HelperPath is the executable that runs commands in their sandbox
	// (it handles command.HelperArg); default: this executable.
	HelperPath string
	// Stdio, when set, is the editor's connection (nexusd --stdio): the
	// daemon serves it with JSON-RPC and stops when the editor goes.
	Stdio *Stdio
	// MCPAddr is the MCP gateway's Streamable HTTP address (loopback
	// host:port); it overrides mcp.http.address.
	MCPAddr string
	// MCPStdio, when set, is an MCP client's connection (nexusd mcp with
	// no daemon running): the daemon serves it one MCP session as
	// MCPParty (an agent acting for the person when zero) and stops when
	// the client goes.
	MCPStdio *Stdio
	MCPToken string
	// ACPStdio, when set, is an ACP client's connection (nexusd acp with
	// no daemon running): the daemon serves it the agent over ACP, acting
	// for the person (or the app of ACPToken), and stops when the client
	// goes.
	ACPStdio *Stdio
	ACPToken string
	// InsecureTCP serves the TCP address (GRPCAddr or grpc.address) as
	// plain TCP, without TLS; it must be on loopback.
	InsecureTCP bool
	// TLSCert and TLSKey are the PEM certificate and key of the TCP
	// address (grpc.tls.cert/key); without them nexusd generates a
	// certificate into .nexus/tls/. TLSClientCA (grpc.tls.clientCA) makes
	// clients present a certificate it signed.
	TLSCert, TLSKey, TLSClientCA string
	// Getenv reads the LLM providers' API keys; default os.LookupEnv.
	Getenv func(string) (string, bool)
	// NewProvider makes the model adapter of an llm profile; default
	// llm.New. Tests put a scripted model here.
	NewProvider func(llm.Profile) (llm.Provider, error)
}

// Stdio is the editor's end of nexusd --stdio.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	// Close closes both; it must unblock a pending read of In.
	Close func() error
}

// ExitError is the end of a daemon whose editor left without the LSP
// shutdown handshake: the process should exit with Code.
type ExitError struct {
	Code   int
	Reason string
}

func (e *ExitError) Error() string { return e.Reason }

// Info is the content of .nexus/run/daemon.json.
type Info = workspace.DaemonInfo

// Run serves the workspace until ctx is cancelled: [Open], then
// [Parts.Serve], then [Parts.Close]. A cancelled context is a normal stop:
// in-flight writes finish, and the lock is released.
func Run(ctx context.Context, opts Options) error {
	p, err := Open(ctx, opts)
	if err != nil {
		return err
	}
	defer p.Close()
	return p.Serve(ctx)
}

// Parts are the daemon of one workspace, open but not serving yet: the
// workspace lock, the configuration, the stores, the ToolManager with its
// policy, the McpHub and the tokens. The daemon, the tests and the bench
// build a daemon the same way, with [Open].
type Parts struct {
	Workspace   string
	Config      *workspace.Config
	Logger      *slog.Logger
	Bus         *events.Bus
	Definitions *state.Definitions
	Runtime     state.Runtime
	Tools       *tools.Manager
	Approvals   *policy.Approvals
	Approvers   *policy.Approvers
	MCP         *mcp.Hub
	Agent       *agent.Service
	// Checkpoints records and undoes the changes of tool calls; nil when
	// checkpoints.enabled is false.
	Checkpoints *checkpoints.Store

	opts        Options
	layout      layout
	cfgSnapshot string
	tcpAddr     string
	// tls is the TLS of tcpAddr; nil for plain TCP (--insecure-tcp) or
	// no TCP.
	tls         *tlsDoor
	mcpAddr     string
	socket      string // the unix socket's path
	permissions rpc.Permissions
	// hooks are the hooks of the configuration, which the editor approves.
	hooks *hooks.Hooks
	// sessionServers keeps the MCP servers of ACP clients to their
	// sessions.
	sessionServers *sessionServers
	adminToken     string
	apps           map[string]*access.App
	appTokens      map[string]string
	// appCerts are the apps' client certificates (apps[].certificate).
	appCerts map[string][32]byte
	// closers undo what Open did, in the reverse order.
	closers []func()
}

// Open takes the workspace's lock and opens the daemon's parts, in order:
// configuration, log, event bus, definitions, runtime values, tools and
// their policy, the McpHub, the tokens. On an error, what was opened is
// closed again.
func Open(ctx context.Context, opts Options) (_ *Parts, err error) {
	ws, err := filepath.Abs(opts.Workspace)
	if err != nil {
		return nil, err
	}
	if info, err := os.Stat(ws); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory", ws)
	}
	p := &Parts{Workspace: ws, opts: opts, layout: newLayout(ws)}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	l := p.layout
	if err := l.MakeDirs(); err != nil {
		return nil, err
	}
	lock, err := acquireLock(l.Lock)
	if err != nil {
		return nil, err
	}
	p.closers = append(p.closers, lock.release)

	p.cfgSnapshot = workspace.SnapshotFiles([]string{l.Config})
	if p.Config, err = workspace.LoadConfig(l.Config, nil); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	cfg := p.Config
	if err := l.CheckDefinitionsRoot(l.Resolve(cfg.Definitions.Root)); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%s: %w", l.Config, err)
	}
	if p.tcpAddr, err = tcpAddress(ctx, opts.GRPCAddr, cfg.GRPC.Address, opts.InsecureTCP, lookupHost); err != nil {
		return nil, err
	}
	if p.mcpAddr, err = mcpHTTPAddress(ctx, opts.MCPAddr, cfg.MCP.HTTP.Address, lookupHost); err != nil {
		return nil, err
	}
	logger, logLevel, closeLog, err := newLogger(opts, cfg)
	if err != nil {
		return nil, err
	}
	p.closers = append(p.closers, closeLog)
	if err := p.openTLS(logger); err != nil {
		return nil, err
	}

	p.Bus = events.New()
	if opts.Stdio != nil {
		// The daemon's warnings reach the editor too.
		logger = slog.New(server.LogHandler(logger.Handler(), p.Bus))
	}
	p.Logger = logger
	if p.Definitions, err = state.OpenDefinitions(state.DefinitionsOptions{
		Dir:         l.Resolve(cfg.Definitions.Root),
		HistoryDir:  l.History,
		Bus:         p.Bus,
		MaxFileSize: int64(cfg.Definitions.MaxFileSize),
		Logger:      logger,
	}); err != nil {
		return nil, fmt.Errorf("definitions: %w", err)
	}
	p.closers = append(p.closers, func() { p.Definitions.Close() })
	// Closed after the tools (their calls' checkpoints are recorded) and
	// before the definitions, whose history repository holds them.
	if p.Checkpoints, err = openCheckpoints(ws, cfg.Checkpoints, p.Definitions, p.Bus, logger); err != nil {
		return nil, err
	}
	if p.Checkpoints != nil {
		p.closers = append(p.closers, func() {
			if err := p.Checkpoints.Close(); err != nil {
				logger.Warn("checkpoints: closing the store", "error", err.Error())
			}
		})
	}
	if p.Runtime, err = openRuntime(cfg.Runtime, l, p.Bus, logger); err != nil {
		return nil, fmt.Errorf("runtime values: %w", err)
	}
	p.closers = append(p.closers, func() { p.Runtime.Close() })

	// The socket's path is known before the tools: commands must not see
	// its directory.
	if p.socket, err = l.socketPath(); err != nil {
		return nil, err
	}
	p.sessionServers = &sessionServers{registry: acp.NewRegistry()}
	tp, err := openTools(ws, opts, p.socket, l, cfg, p.Definitions, p.Bus, p.sessionServers, recorder(p.Checkpoints), logger)
	if err != nil {
		return nil, err
	}
	p.Tools, p.Approvals, p.Approvers, p.permissions, p.hooks = tp.manager, tp.approvals, tp.approvers, tp.permissions, tp.hooks
	p.closers = append(p.closers, func() { p.Tools.Close(); tp.core.Close() })
	p.MCP = openMCP(ws, cfg, p.Tools, p.Bus, logger, logLevel, opts)
	p.sessionServers.setHub(p.MCP)
	p.closers = append(p.closers, func() { p.MCP.Close() })

	if p.adminToken, err = l.writeAdminToken(); err != nil {
		return nil, err
	}
	if p.apps, p.appTokens, err = l.appTokens(cfg.Apps); err != nil {
		return nil, err
	}
	if p.Agent, err = openAgent(l, cfg, tp, p.Definitions, p.Checkpoints, p.apps, p.sessionServers, opts, logger); err != nil {
		return nil, err
	}
	p.closers = append(p.closers, func() { p.Agent.Close() })
	return p, nil
}

// Close closes what Open opened, in the reverse order: the McpHub's
// servers stop, running tool calls are cancelled, the stores close after
// the writes in flight, and the lock is released last. It is safe to call
// more than once.
func (p *Parts) Close() error {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
	p.closers = nil
	return nil
}

// Serve serves gRPC (the unix socket, and the TCP address with TLS, or as
// plain TCP with --insecure-tcp), publishes daemon.json, watches the
// definitions root and the configuration files, and serves the editor with
// --stdio, until ctx is cancelled or the editor goes. It does not close the parts.
func (p *Parts) Serve(ctx context.Context) error {
	l, cfg, logger, ws, opts := p.layout, p.Config, p.Logger, p.Workspace, p.opts
	// One message, over gRPC or from the editor, carries at most the
	// largest definition file (twice, in a diff) or the largest tool
	// arguments; a larger one is refused before it is read.
	maxMsg := max(int(cfg.GRPC.MaxMessageSize), max(2*int(cfg.Definitions.MaxFileSize), int(cfg.Tools.MaxArgumentsSize))+1<<20)
	auth := rpc.NewAuthenticator(p.adminToken, p.apps, p.appTokens, p.appCerts)
	var creds credentials.TransportCredentials
	if p.tls != nil {
		creds = &doorCreds{tls: credentials.NewTLS(p.tls.config)}
	}
	srv := rpc.NewServer(rpc.Config{
		Creds:          creds,
		Definitions:    p.Definitions,
		Runtime:        p.Runtime,
		Bus:            p.Bus,
		Auth:           auth,
		Logger:         logger,
		MaxMessageSize: maxMsg,
		Tools:          p.Tools,
		Permissions:    p.permissions,
		Approvals:      p.Approvals,
		Approvers:      p.Approvers,
		MCP:            p.MCP,
		Agent:          p.Agent,
		Checkpoints:    p.Checkpoints,
	})

	sock := p.socket
	unixLis, err := listenUnix(sock)
	if err != nil {
		return err
	}
	defer os.Remove(sock)
	mcpCtx, stopMCP := context.WithCancel(ctx)
	defer stopMCP()
	doors, err := p.openMCPDoors(mcpCtx, auth, maxMsg)
	if err != nil {
		unixLis.Close()
		return err
	}
	defer doors.close()
	var mcpParty access.Party
	if opts.MCPStdio != nil {
		mcpParty = access.Person("mcp").Agent("mcp")
		if opts.MCPToken != "" {
			var ok bool
			if mcpParty, ok = doors.auth(opts.MCPToken); !ok {
				unixLis.Close()
				return errors.New("nexusd mcp: the token (--token-file or NEXUS_TOKEN) is not the token of an app of .nexus/config.yaml")
			}
		}
	}
	acpClient := access.Person("acp")
	if opts.ACPStdio != nil && opts.ACPToken != "" {
		id, ok := auth.Identify(opts.ACPToken)
		if !ok || id.App == nil {
			unixLis.Close()
			return errors.New("nexusd acp: the token (--token-file or NEXUS_TOKEN) is not the token of an app of .nexus/config.yaml")
		}
		acpClient = acpParty(id)
	}
	listeners := []net.Listener{unixLis}
	info := Info{PID: os.Getpid(), Version: opts.Version, Workspace: ws, GRPCAddress: unixTarget(sock), AdminTokenFile: l.AdminToken,
		MCPSocket: doors.sock.Addr().String(), MCPURL: doors.url()}
	if p.tcpAddr != "" {
		tl, err := net.Listen("tcp", p.tcpAddr)
		if err != nil {
			unixLis.Close()
			return fmt.Errorf("listen on %s: %w", p.tcpAddr, err)
		}
		listeners = append(listeners, tl)
		info.GRPCTCPAddress = tl.Addr().String()
		if p.tls == nil {
			logger.Warn("serving gRPC over plain TCP (--insecure-tcp): bearer tokens cross it in clear, and any process of this machine may connect",
				"address", info.GRPCTCPAddress)
		} else {
			info.TLSCertFile, info.TLSFingerprint = p.tls.certFile, workspace.FormatFingerprint(p.tls.fingerprint)
			p.announceTLS(info)
		}
	}
	if err := workspace.WriteJSONAtomic(l.DaemonJSON, info); err != nil {
		return err
	}
	defer os.Remove(l.DaemonJSON)
	logger.Info("nexusd ready", "workspace", ws, "grpc", info.GRPCAddress, "tcp", info.GRPCTCPAddress,
		"version", opts.Version, "head", p.Definitions.Head(), "apps", len(p.apps), "mcp", info.MCPURL)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { doors.gw.Run(gctx); return nil })
	g.Go(func() error { return doors.serveSocket(mcpCtx) })
	g.Go(doors.serveHTTP)
	if opts.MCPStdio != nil {
		g.Go(func() error {
			err := doors.serveStdio(gctx, opts.MCPStdio, mcpParty)
			logger.Info("MCP client connection ended")
			return err
		})
	}
	if opts.ACPStdio != nil {
		g.Go(func() error {
			err := acp.Serve(gctx, p.acpOptions(acpClient), opts.ACPStdio.In, opts.ACPStdio.Out)
			opts.ACPStdio.Close()
			logger.Info("ACP client connection ended")
			if err != nil {
				return err
			}
			return errEditorGone
		})
	}
	g.Go(func() error {
		if err := p.MCP.Watch(gctx, nil); err != nil {
			logger.Warn("MCP configuration files are not watched: edits apply at the next start", "error", err.Error())
		}
		return nil
	})
	if cfg.Definitions.Watch {
		g.Go(func() error {
			watchDefinitions(gctx, p.Definitions, l.Resolve(cfg.Definitions.Root), time.Duration(cfg.Definitions.Debounce), logger)
			return nil
		})
	}
	g.Go(func() error {
		watchConfig(gctx, l.Config, p.cfgSnapshot, logger)
		return nil
	})
	g.Go(func() error {
		watchCommands(gctx, p.Agent, p.Bus, ws, cfg.Agent.CommandDirs, logger)
		return nil
	})
	var editorExit *ExitError
	if opts.Stdio != nil {
		editor := server.New(server.Options{
			Definitions: p.Definitions,
			Runtime:     p.Runtime,
			Tools:       p.Tools,
			MCP:         p.MCP,
			Hooks:       p.hooks,
			Bus:         p.Bus,
			Approvers:   p.Approvers,
			Agent:       p.Agent,
			Approvals:   p.Approvals,
			Checkpoints: p.Checkpoints,
			Apps:        appIDs(p.apps),
			Logger:      logger,
			MaxMessage:  maxMsg,
			Info: server.Info{Version: opts.Version, Workspace: ws, GRPCAddress: info.GRPCAddress, GRPCTCPAddress: info.GRPCTCPAddress, TLSFingerprint: info.TLSFingerprint,
				AdminTokenFile: l.AdminToken, DefinitionsRoot: l.Resolve(cfg.Definitions.Root), Debounce: time.Duration(cfg.Definitions.Debounce).String()},
		})
		g.Go(func() error {
			code, err := editor.Serve(gctx, opts.Stdio.In, opts.Stdio.Out, opts.Stdio.Close)
			reason := "the editor sent exit"
			if err != nil {
				reason = err.Error()
			}
			logger.Info("editor connection ended", "reason", reason, "exit_code", code)
			if code != 0 && gctx.Err() == nil {
				editorExit = &ExitError{Code: code, Reason: reason + " without shutdown"}
			}
			return errEditorGone // stops the daemon
		})
	}
	for _, lis := range listeners {
		g.Go(func() error {
			// A stop before Serve began (the context ended at once: seen
			// under emulation, where the goroutines start late) is a stop.
			if err := srv.Serve(lis); !errors.Is(err, grpc.ErrServerStopped) {
				return err
			}
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		logger.Info("nexusd stopping")
		os.Remove(l.DaemonJSON) // new clients should not find a daemon that is leaving
		p.Tools.Close()         // cancels running tool calls (their processes are killed)
		p.MCP.Close()           // stops the MCP servers
		p.Bus.Close()           // ends watch streams, so that graceful stop can finish
		stopMCP()               // ends the MCP sessions
		doors.close()
		done := make(chan struct{})
		go func() { srv.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			logger.Warn("in-flight calls did not finish in 10s; stopping them")
			srv.Stop()
		}
		return nil
	})
	err = g.Wait()
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, errEditorGone) {
		return err
	}
	logger.Info("nexusd stopped")
	if editorExit != nil {
		return editorExit
	}
	return nil
}

// openTLS sets up the TLS of the TCP address (see tls.go) and reads the
// apps' client certificates.
func (p *Parts) openTLS(logger *slog.Logger) error {
	cfg := p.Config
	src, err := tlsSettings(p.opts, cfg.GRPC.TLS, p.layout, p.tcpAddr, func(msg string) { logger.Warn(msg) })
	if err != nil {
		return err
	}
	if p.tcpAddr != "" && !p.opts.InsecureTCP {
		if p.tls, err = openTLS(src, p.layout, p.tcpAddr, logger); err != nil {
			return err
		}
	}
	p.appCerts = map[string][32]byte{}
	var withCert []string
	for _, a := range cfg.Apps {
		if a.Certificate == "" {
			continue
		}
		fp, err := workspace.ParseFingerprint(a.Certificate)
		if err != nil { // checked by LoadConfig already
			return fmt.Errorf("app %q: certificate: %w", a.ID, err)
		}
		p.appCerts[a.ID] = fp
		withCert = append(withCert, a.ID)
	}
	if len(withCert) > 0 && (p.tls == nil || !p.tls.clientCerts) {
		logger.Warn("apps[].certificate is used only over TLS with client certificates (--tls-client-ca or grpc.tls.clientCA); these apps authenticate with their tokens alone",
			"apps", strings.Join(withCert, ","))
	}
	return nil
}

// announceTLS logs the TCP address's certificate and its fingerprint, and
// prints them on standard error too when the log goes to a file or leaves
// out info lines, so that the person who started the daemon always sees
// the fingerprint to give to clients.
func (p *Parts) announceTLS(info Info) {
	what := "a generated self-signed certificate"
	if !p.tls.generated {
		what = "the configured certificate"
	}
	p.Logger.Info("serving gRPC over TLS with "+what, "address", info.GRPCTCPAddress, "cert", info.TLSCertFile,
		"sha256", info.TLSFingerprint, "clientCertificates", p.tls.clientCerts)
	if p.opts.LogFile != "" || p.Config.Log.File != "" || !p.Logger.Enabled(context.Background(), slog.LevelInfo) {
		w := p.opts.Stderr
		if w == nil {
			w = os.Stderr
		}
		fmt.Fprintf(w, "nexusd: gRPC over TLS on %s with %s (%s), SHA-256 fingerprint %s\n", info.GRPCTCPAddress, what, info.TLSCertFile, info.TLSFingerprint)
	}
}

// errEditorGone ends the daemon's errgroup when the editor's connection
// ends; it is a normal stop.
var errEditorGone = errors.New("the editor is gone")

// newLogger returns the daemon's logger and its level.
func newLogger(opts Options, cfg *workspace.Config) (*slog.Logger, slog.Level, func(), error) {
	levelName := opts.LogLevel
	if levelName == "" {
		levelName = cfg.Log.Level
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(levelName))); err != nil {
		return nil, 0, nil, fmt.Errorf("--log-level %q is not one of debug, info, warn, error", levelName)
	}
	file := opts.LogFile
	if file == "" {
		file = cfg.Log.File
	}
	w := opts.Stderr
	if w == nil {
		w = os.Stderr
	}
	closer := func() {}
	if file != "" {
		if !filepath.IsAbs(file) && opts.LogFile == "" {
			file = filepath.Join(opts.Workspace, file)
		}
		f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("log file: %w", err)
		}
		w = f
		closer = func() { f.Close() }
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), level, closer, nil
}

func listenUnix(path string) (net.Listener, error) {
	// The workspace lock is held, so a socket file left here is stale.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := restrictSocket(path); err != nil {
		lis.Close()
		return nil, err
	}
	return lis, nil
}

// openRuntime opens the runtime store the config names: the bbolt file, or
// a Redis server. A Redis that is down is not an error: the daemon serves
// everything else, and runtime calls fail with UNAVAILABLE until it is back.
func openRuntime(cfg workspace.RuntimeConfig, l layout, bus *events.Bus, logger *slog.Logger) (state.Runtime, error) {
	// Each branch returns a nil interface on failure, not a nil store in one.
	if cfg.Backend == "redis" {
		r, err := state.OpenRedisRuntime(state.RedisOptions{
			URL:          cfg.URL,
			Prefix:       cfg.Prefix,
			Bus:          bus,
			MaxValueSize: int(cfg.MaxValueSize),
			Logger:       logger,
			Cache:        cfg.Cache,
			CacheSize:    int64(cfg.CacheSize),
		})
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	r, err := state.OpenRuntime(l.Resolve(cfg.Path), state.RuntimeOptions{
		Bus:           bus,
		MaxValueSize:  int(cfg.MaxValueSize),
		PurgeInterval: time.Duration(cfg.PurgeInterval),
		Logger:        logger,
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// unixTarget is gRPC's target for the unix socket at sock: "unix:///run/x.sock"
// on unix; on Windows "unix:C:\…", since "unix://C:\…" does not parse as a
// URL (its drive would be read as a host).
func unixTarget(sock string) string {
	if strings.HasPrefix(sock, "/") {
		return "unix://" + sock
	}
	return "unix:" + sock
}
