package command

import (
	"fmt"
	"runtime"
)

// noSandbox is why the sandboxed modes do not run on goos/goarch: the
// command sandbox is Linux's (Landlock, namespaces, seccomp, capabilities)
// and has no counterpart elsewhere yet. The caller adds how to run
// commands anyway (tools.sandbox: off).
func noSandbox(goos, goarch string) error {
	return fmt.Errorf("%w: no command sandbox on %s/%s yet (Nexus confines commands with Linux's Landlock, namespaces and seccomp only)",
		ErrSandboxUnavailable, goos, goarch)
}

// SandboxOnPlatform says whether this platform has the command sandbox at
// all: nil on Linux (where Run still checks what the kernel enforces), the
// refusal Run gives elsewhere. A caller checks it before preparing a
// sandboxed command, so that nothing is done for a command that cannot run.
func SandboxOnPlatform() error {
	if runtime.GOOS == "linux" {
		return nil
	}
	return noSandbox(runtime.GOOS, runtime.GOARCH)
}
