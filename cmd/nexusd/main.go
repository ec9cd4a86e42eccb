// Command nexusd is the per-workspace Nexus daemon. It serves the
// workspace's definition files, runtime values and tools over gRPC until
// SIGINT or SIGTERM.
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
	if err := run(context.Background(), os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
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
	fs.StringVar(&opts.GRPCAddr, "grpc-addr", "", "also serve gRPC on this TCP `address` (host:port)")
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
		return errors.New("--stdio: the editor protocol is not in this build yet; run headless without --stdio")
	}
	opts.Version = version
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return daemon.Run(ctx, opts)
}
