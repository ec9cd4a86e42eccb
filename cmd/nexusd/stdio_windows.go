package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/windows"

	"github.com/nexuscocreate/nexus/daemon"
)

// stdioConn takes stdin and stdout for the protocol. The process's
// standard output handle, and os.Stdout, are pointed at stderr, so that
// nothing else (a library, a child process started with the standard
// handles) writes into the protocol stream; a panic writes to stderr
// anyway. Closing a pipe's file cancels a pending read (CancelIoEx), so
// nothing needs to be made non-blocking.
func stdioConn() (*daemon.Stdio, func(), error) {
	in, out := os.Stdin, os.Stdout
	if err := windows.SetStdHandle(windows.STD_OUTPUT_HANDLE, windows.Handle(os.Stderr.Fd())); err != nil {
		return nil, nil, fmt.Errorf("pointing standard output at stderr: %w", err)
	}
	os.Stdout = os.Stderr
	return &daemon.Stdio{In: in, Out: out, Close: func() error {
		in.Close()
		return out.Close()
	}}, func() {}, nil
}
