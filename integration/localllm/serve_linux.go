package localllm

import (
	"os"
	"syscall"
)

// errNotHere is nil: the chroot of llama-server is Linux's.
var errNotHere error

// stopSignal stops the server (local-llm.sh serve) cleanly.
var stopSignal os.Signal = syscall.SIGTERM

// serverAttr has the server stopped when the tests end, however they end.
func serverAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} }
