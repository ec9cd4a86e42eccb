package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/gateway"
	"github.com/nexuscocreate/nexus/rpc"
)

// The MCP gateway's doors: the MCP socket beside the gRPC socket (always;
// nexusd mcp reaches a running daemon through it), Streamable HTTP on a
// loopback address (mcp.http.address or --mcp-addr), and, for nexusd mcp
// when no daemon ran, stdio.

// mcpParty is who acts for a token: an app as itself (its grants and its
// tool lists apply), the admin token as an agent acting for the person.
// An MCP client is an LLM's client and may be prompt-injected, so its
// calls are never the person's own act: the policy's admin default does
// not apply, and medium and high risk calls ask the person in the editor.
func mcpParty(id rpc.Identity) access.Party {
	if id.App != nil {
		return access.ForApp(id.App)
	}
	return access.Person("mcp").Agent("mcp")
}

func authenticateMCP(a *rpc.Authenticator) gateway.Authenticate {
	return func(token string) (access.Party, bool) {
		id, ok := a.Identify(token)
		if !ok {
			return access.Party{}, false
		}
		return mcpParty(id), true
	}
}

// mcpSocketPath is the MCP socket beside the gRPC one.
func mcpSocketPath(grpcSocket string) string {
	return strings.TrimSuffix(grpcSocket, ".sock") + "-mcp.sock"
}

// mcpHTTPAddress checks the MCP gateway's HTTP address: a loopback
// host:port, since there is no TLS and bearer tokens cross it in clear.
func mcpHTTPAddress(ctx context.Context, flagAddr, configAddr string, lookup lookupFunc) (string, error) {
	addr, from := flagAddr, "--mcp-addr "+flagAddr
	if addr == "" {
		addr, from = configAddr, fmt.Sprintf("mcp.http.address %q in .nexus/config.yaml", configAddr)
	}
	if addr == "" {
		return "", nil
	}
	notLoopback := func(what string) error {
		return fmt.Errorf("%s: %s; the MCP gateway serves HTTP on a loopback address only (127.0.0.0/8, ::1 or localhost), "+
			"since there is no TLS and bearer tokens would cross the network in clear", from, what)
	}
	return loopbackAddress(ctx, addr, from, notLoopback, lookup)
}

// mcpDoors are the gateway's listeners while the daemon serves.
type mcpDoors struct {
	gw   *gateway.Gateway
	auth gateway.Authenticate
	// doors are the other protocols of the MCP socket (acp).
	doors  map[string]gateway.Door
	sock   net.Listener
	http   *http.Server
	httpLn net.Listener
	logger *slog.Logger
}

// openMCPDoors listens on the MCP socket and, when an address is set, on
// HTTP. It returns the doors and the URL of the HTTP endpoint.
func (p *Parts) openMCPDoors(ctx context.Context, a *rpc.Authenticator, maxMsg int) (*mcpDoors, error) {
	cfg := p.Config
	d := &mcpDoors{logger: p.Logger, auth: authenticateMCP(a), doors: map[string]gateway.Door{"acp": p.acpDoor(a)}}
	d.gw = gateway.New(gateway.Options{Tools: p.Tools, Hub: p.MCP, Bus: p.Bus, Logger: p.Logger, Workspace: p.Workspace,
		Separator: cfg.MCP.Separator, Version: p.opts.Version})
	var err error
	if d.sock, err = listenUnix(mcpSocketPath(p.socket)); err != nil {
		return nil, err
	}
	if p.mcpAddr != "" {
		if d.httpLn, err = net.Listen("tcp", p.mcpAddr); err != nil {
			d.sock.Close()
			return nil, fmt.Errorf("MCP gateway: listen on %s: %w", p.mcpAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/mcp", d.gw.HTTPHandler(gateway.HTTPOptions{Authenticate: d.auth, AllowedOrigins: cfg.MCP.HTTP.AllowedOrigins,
			AllowedHosts: cfg.MCP.HTTP.AllowedHosts, MaxRequestBytes: int64(maxMsg),
			SessionIdleTimeout: time.Duration(cfg.MCP.HTTP.SessionIdleTimeout), MaxSessionsPerToken: cfg.MCP.HTTP.MaxSessionsPerToken}))
		d.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	}
	return d, nil
}

func (d *mcpDoors) url() string {
	if d.httpLn == nil {
		return ""
	}
	return "http://" + d.httpLn.Addr().String() + "/mcp"
}

// serveSocket accepts MCP socket connections until the listener closes.
func (d *mcpDoors) serveSocket(ctx context.Context) error {
	for {
		conn, err := d.sock.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("MCP socket: %w", err)
		}
		go func() {
			if err := d.gw.ServeConn(ctx, conn, d.auth, d.doors); err != nil && ctx.Err() == nil {
				d.logger.Debug("MCP socket connection ended", "error", err.Error())
			}
		}()
	}
}

func (d *mcpDoors) serveHTTP() error {
	if d.http == nil {
		return nil
	}
	if err := d.http.Serve(d.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("MCP gateway HTTP: %w", err)
	}
	return nil
}

// close stops accepting and ends the sessions.
func (d *mcpDoors) close() {
	d.sock.Close()
	os.Remove(d.sock.Addr().String())
	if d.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if d.http.Shutdown(ctx) != nil {
			d.http.Close() // open SSE streams do not end by themselves
		}
	}
}

// serveStdio serves one MCP session on the daemon's stdio (nexusd mcp with
// no daemon running) as the party of token ("" for the admin), until the
// client goes.
func (d *mcpDoors) serveStdio(ctx context.Context, stdio *Stdio, party access.Party) error {
	in, out := gateway.GuardLines(stdio.In, stdio.Out)
	t := &sdk.IOTransport{Reader: readCloser{in, stdio.Close}, Writer: writeCloser{out}}
	session, err := d.gw.Server(party).Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { session.Close() })
	defer stop()
	session.Wait()
	return errEditorGone
}

type readCloser struct {
	r     interface{ Read([]byte) (int, error) }
	close func() error
}

func (r readCloser) Read(b []byte) (int, error) { return r.r.Read(b) }
func (r readCloser) Close() error               { return r.close() }

type writeCloser struct {
	w interface{ Write([]byte) (int, error) }
}

func (w writeCloser) Write(b []byte) (int, error) { return w.w.Write(b) }
func (w writeCloser) Close() error                { return nil }
