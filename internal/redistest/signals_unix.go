//go:build unix

package redistest

import (
	"os"
	"syscall"
)

// The signals that pause, continue and stop the server.
var (
	sigStop os.Signal = syscall.SIGSTOP
	sigCont os.Signal = syscall.SIGCONT
	sigTerm os.Signal = syscall.SIGTERM
)
