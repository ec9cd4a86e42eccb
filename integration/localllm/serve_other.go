//go:build !linux

package localllm

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// errNotHere says why there is no local llama-server here: it runs in a
// Debian chroot (scripts/local-llm.sh), on Linux only.
var errNotHere = fmt.Errorf("the local llama-server runs in a Debian chroot, on Linux only, not on %s", runtime.GOOS)

// stopSignal is never sent: Serve fails first (errNotHere).
var stopSignal = os.Kill

// serverAttr is never used: Serve fails first (errNotHere).
func serverAttr() *syscall.SysProcAttr { return nil }
