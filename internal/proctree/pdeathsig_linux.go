package proctree

import "syscall"

// dieWithParent makes the kernel kill the root when the thread that
// started it exits. Go's runtime does not end its threads (but one that a
// goroutine locked and left locked), so in practice that is when the
// daemon's process ends, however it ends.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
