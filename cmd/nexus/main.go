// Command nexus is the command line of a workspace's nexusd daemon; see
// package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/nexuscocreate/nexus/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
