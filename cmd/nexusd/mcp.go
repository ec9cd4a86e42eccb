package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nexuscocreate/nexus/daemon"
	"github.com/nexuscocreate/nexus/gateway"
	"github.com/nexuscocreate/nexus/workspace"
)

// runMCP is nexusd mcp: Nexus as an MCP server on stdin/stdout, for MCP
// clients that launch their servers. A daemon that already runs for the
// workspace holds its lock, so nexusd mcp connects to that daemon's MCP
// socket and copies bytes both ways: one MCP server, the daemon's, serves
// every client, and its tool calls are the daemon's (the editor's
// prompts, the activity stream, the audit log). When no daemon runs,
// nexusd mcp is the daemon, serving the MCP session on stdio besides its
// gRPC socket (so that nexus mcp trust and the editor work meanwhile),
// until the client goes.
func runMCP(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("nexusd mcp", flag.ContinueOnError)
	var opts daemon.Options
	var tokenFile string
	fs.StringVar(&opts.Workspace, "workspace", ".", "the workspace `dir`ectory")
	fs.StringVar(&tokenFile, "token-file", "", "act as the app whose token is in this `file` (or $NEXUS_TOKEN); default the person")
	fs.StringVar(&opts.LogFile, "log-file", "", "when nexusd mcp is the daemon, write the log to this `file` instead of stderr")
	fs.StringVar(&opts.LogLevel, "log-level", "", "log `level`: debug, info, warn or error")
	fs.StringVar(&opts.MCPAddr, "mcp-addr", "", "when nexusd mcp is the daemon, also serve MCP over Streamable HTTP on this loopback `address`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("mcp: unexpected argument %q (see nexusd mcp -h)", fs.Arg(0))
	}
	token := os.Getenv("NEXUS_TOKEN")
	if tokenFile != "" {
		data, err := os.ReadFile(tokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		token = strings.TrimSpace(string(data))
	}
	ws, err := filepath.Abs(opts.Workspace)
	if err != nil {
		return err
	}
	opts.Workspace, opts.MCPToken = ws, token
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	conn, restore, err := stdioConn()
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	defer restore()
	for attempt := 0; ; attempt++ {
		err := bridge(ctx, ws, token, conn)
		if !errors.Is(err, errNoDaemon) {
			return err
		}
		opts.MCPStdio, opts.Version = conn, version
		err = daemon.Run(ctx, opts)
		if !errors.Is(err, daemon.ErrLocked) || attempt == 50 {
			return err
		}
		// Another daemon took the lock a moment ago: wait for its socket.
		time.Sleep(100 * time.Millisecond)
	}
}

var errNoDaemon = errors.New("no daemon runs for the workspace")

// bridge hands stdio to the running daemon through its MCP socket, and
// waits for the session's end; or returns errNoDaemon.
func bridge(ctx context.Context, ws, token string, stdio *daemon.Stdio) error {
	data, err := os.ReadFile(filepath.Join(ws, ".nexus", "run", "daemon.json"))
	if err != nil {
		return errNoDaemon
	}
	var info workspace.DaemonInfo
	if json.Unmarshal(data, &info) != nil || info.MCPSocket == "" {
		return errNoDaemon
	}
	c, err := net.Dial("unix", info.MCPSocket)
	if err != nil {
		return errNoDaemon
	}
	defer c.Close()
	if token == "" {
		tok, err := os.ReadFile(info.AdminTokenFile)
		if err != nil {
			return fmt.Errorf("mcp: the running daemon's admin token: %w", err)
		}
		token = strings.TrimSpace(string(tok))
	}
	in, okIn := stdio.In.(*os.File)
	out, okOut := stdio.Out.(*os.File)
	if !okIn || !okOut {
		return errors.New("mcp: stdin and stdout are not files") // stdioConn's are
	}
	// The daemon serves the client on this process's stdin and stdout
	// directly; the connection lasts as long as the session.
	if err := gateway.HandshakeStdio(c.(*net.UnixConn), token, in, out); err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	ended := make(chan struct{})
	go func() {
		io.Copy(io.Discard, c)
		close(ended)
	}()
	select {
	case <-ctx.Done():
	case <-ended: // the session ended, or the daemon went
	}
	stdio.Close()
	return nil
}
