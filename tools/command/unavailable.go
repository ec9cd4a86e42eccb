package command

import "fmt"

// noSandbox is why the sandboxed modes do not run on goos/goarch: the
// command sandbox is Linux's (Landlock, namespaces, seccomp, capabilities)
// and has no counterpart elsewhere yet. The caller adds how to run
// commands anyway (tools.sandbox: off).
func noSandbox(goos, goarch string) error {
	return fmt.Errorf("%w: no command sandbox on %s/%s yet (Nexus confines commands with Linux's Landlock, namespaces and seccomp only)",
		ErrSandboxUnavailable, goos, goarch)
}
