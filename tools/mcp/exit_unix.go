//go:build unix

package mcp

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// describeExit says how a stdio server's process ended.
func describeExit(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "was killed by " + unix.SignalName(ws.Signal())
	}
	return fmt.Sprintf("exited with code %d", st.ExitCode())
}
