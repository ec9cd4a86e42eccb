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
// clients that launch their servers. See runDoor.
func runMCP(ctx context.Context, args []string) error {
	return runDoor(ctx, mcpDoor, args)
}

// runACP is nexusd acp: the Nexus agent over the Agent Client Protocol on
// stdin/stdout, for the editors that launch ACP agents (Zed, JetBrains,
// Neovim). See runDoor.
func runACP(ctx context.Context, args []string) error {
	return runDoor(ctx, acpDoor, args)
}

// door is a protocol nexusd serves a client on its stdio.
type door struct {
	name string // the verb: mcp, acp
	// word is the MCP socket handshake's word for the door.
	word string
}

var (
	mcpDoor = door{name: "mcp", word: "stdio"}
	acpDoor = door{name: "acp", word: "acp"}
)

// runDoor serves a client on stdin/stdout. A daemon that already runs for
// the workspace holds its lock, so nexusd hands its stdin and stdout to
// that daemon through the MCP socket: the daemon serves the client
// directly, and its tool calls are the daemon's (the editor's prompts,
// the activity stream, the audit log). When no daemon runs, this nexusd is
// the daemon, serving the client on stdio besides its gRPC socket (so
// that the other doors work meanwhile), until the client goes.
func runDoor(ctx context.Context, d door, args []string) error {
	fs := flag.NewFlagSet("nexusd "+d.name, flag.ContinueOnError)
	var opts daemon.Options
	var tokenFile string
	fs.StringVar(&opts.Workspace, "workspace", ".", "the workspace `dir`ectory")
	fs.StringVar(&tokenFile, "token-file", "", "act as the app whose token is in this `file` (or $NEXUS_TOKEN); default the person")
	fs.StringVar(&opts.LogFile, "log-file", "", "when nexusd "+d.name+" is the daemon, write the log to this `file` instead of stderr")
	fs.StringVar(&opts.LogLevel, "log-level", "", "log `level`: debug, info, warn or error")
	if d == mcpDoor {
		fs.StringVar(&opts.MCPAddr, "mcp-addr", "", "when nexusd mcp is the daemon, also serve MCP over Streamable HTTP on this loopback `address`")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q (see nexusd %s -h)", d.name, fs.Arg(0), d.name)
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
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: the workspace %s is not a directory", d.name, ws)
	}
	opts.Workspace = ws
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	conn, restore, err := stdioConn()
	if err != nil {
		return fmt.Errorf("%s: %w", d.name, err)
	}
	defer restore()
	for attempt := 0; ; attempt++ {
		err := bridge(ctx, d, ws, token, conn)
		if !errors.Is(err, errNoDaemon) {
			return err
		}
		opts.Version = version
		if d == acpDoor {
			opts.ACPStdio, opts.ACPToken = conn, token
		} else {
			opts.MCPStdio, opts.MCPToken = conn, token
		}
		err = daemon.Run(ctx, opts)
		if !errors.Is(err, daemon.ErrLocked) || attempt == 50 {
			return err
		}
		// Another daemon took the lock a moment ago: wait for its socket.
		time.Sleep(100 * time.Millisecond)
	}
}

var errNoDaemon = errors.New("no daemon runs for the workspace")

// bridge hands stdio to the running daemon's door d through its MCP
// socket, and waits for the session's end; or returns errNoDaemon.
func bridge(ctx context.Context, d door, ws, token string, stdio *daemon.Stdio) error {
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
			return fmt.Errorf("%s: the running daemon's admin token: %w", d.name, err)
		}
		token = strings.TrimSpace(string(tok))
	}
	in, okIn := stdio.In.(*os.File)
	out, okOut := stdio.Out.(*os.File)
	if !okIn || !okOut {
		return fmt.Errorf("%s: stdin and stdout are not files", d.name) // stdioConn's are
	}
	// The daemon serves the client on this process's stdin and stdout
	// directly; the connection lasts as long as the session. Where
	// descriptors cannot be passed (Windows), this process copies the
	// client's bytes over the connection instead.
	err = gateway.HandshakeDoor(c.(*net.UnixConn), token, d.word, in, out)
	if errors.Is(err, gateway.ErrNoFilePassing) {
		return copyBridge(ctx, d, c, token, stdio)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", d.name, err)
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

// copyBridge opens the daemon's door d on c and copies the client's bytes
// both ways until the session ends (the daemon closes c, or the client
// closes stdin) or ctx does.
func copyBridge(ctx context.Context, d door, c net.Conn, token string, stdio *daemon.Stdio) error {
	fromDaemon, err := gateway.HandshakeInline(c, token, d.word)
	if err != nil {
		return fmt.Errorf("%s: %w", d.name, err)
	}
	ended := make(chan struct{})
	go func() {
		io.Copy(stdio.Out, fromDaemon)
		close(ended)
	}()
	go func() {
		io.Copy(c, stdio.In)
		// The client is done: the daemon ends the session on end of file.
		if uc, ok := c.(*net.UnixConn); !ok || uc.CloseWrite() != nil {
			c.Close()
		}
	}()
	select {
	case <-ctx.Done():
	case <-ended:
	}
	stdio.Close()
	return nil
}
