// Command nexusd is the per-workspace Nexus daemon. It serves the
// workspace's definition files, runtime values and tools over gRPC until
// SIGINT or SIGTERM, or, with --stdio, until the editor that launched it
// goes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/nexuscocreate/nexus/daemon"
	"github.com/nexuscocreate/nexus/tools/command"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// nexusd re-executes itself as the sandbox of execute_command.
	if len(os.Args) > 1 && os.Args[1] == command.HelperArg {
		os.Exit(command.HelperMain(os.Args[2:]))
	}
	run := run
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "mcp":
			run = func(ctx context.Context, args []string) error { return runMCP(ctx, args[1:]) }
		case "acp":
			run = func(ctx context.Context, args []string) error { return runACP(ctx, args[1:]) }
		}
	}
	if err := run(context.Background(), os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		var exit *daemon.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.Code) // the editor left without shutdown; logged already
		}
		fmt.Fprintln(os.Stderr, "nexusd:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("nexusd", flag.ContinueOnError)
	var opts daemon.Options
	var stdio, showVersion bool
	fs.StringVar(&opts.Workspace, "workspace", ".", "the workspace `dir`ectory")
	fs.BoolVar(&stdio, "stdio", false, "speak JSON-RPC to an editor on stdin/stdout")
	fs.StringVar(&opts.GRPCAddr, "grpc-addr", "", "also serve gRPC with TLS on this TCP `address` (host:port; grpc.address)")
	fs.StringVar(&opts.MCPAddr, "mcp-addr", "", "serve MCP clients over Streamable HTTP at http://`address`/mcp (loopback host:port; mcp.http.address)")
	fs.BoolVar(&opts.InsecureTCP, "insecure-tcp", false, "serve gRPC over plain TCP, without TLS, on a loopback address (--grpc-addr or grpc.address)")
	fs.StringVar(&opts.TLSCert, "tls-cert", "", "the TLS certificate `file` (PEM) of --grpc-addr (grpc.tls.cert; default: a generated one in .nexus/tls/)")
	fs.StringVar(&opts.TLSKey, "tls-key", "", "the private key `file` (PEM, mode 0600) of --tls-cert (grpc.tls.key)")
	fs.StringVar(&opts.TLSClientCA, "tls-client-ca", "", "require TLS client certificates signed by the CA certificates of this PEM `file` (grpc.tls.clientCA)")
	fs.StringVar(&opts.LogFile, "log-file", "", "write the log to this `file` instead of stderr")
	fs.StringVar(&opts.LogLevel, "log-level", "", "log `level`: debug, info, warn or error (default from config: info)")
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see nexusd -h)", fs.Arg(0))
	}
	if showVersion {
		fmt.Println("nexusd", version)
		return nil
	}
	if stdio {
		conn, restore, err := stdioConn()
		if err != nil {
			return fmt.Errorf("--stdio: %w", err)
		}
		defer restore()
		opts.Stdio = conn
	}
	opts.Version = version
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return daemon.Run(ctx, opts)
}
