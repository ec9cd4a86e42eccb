//go:build !linux

package command

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// Outside Linux the sandboxed modes fail closed, naming the platform, and
// Off mode runs the command as a plain process.
func TestSandboxedModesRefused(t *testing.T) {
	r := NewRunner(RunnerOptions{})
	for _, mode := range []Mode{ReadOnly, WorkspaceWrite} {
		spec := plainSpec(t, "print")
		spec.Mode, spec.Workspace = mode, spec.Dir
		res, err := r.Run(context.Background(), spec)
		if !errors.Is(err, ErrSandboxUnavailable) {
			t.Fatalf("mode %s: Run = %+v, %v; want ErrSandboxUnavailable", mode, res, err)
		}
		if want := runtime.GOOS + "/" + runtime.GOARCH; !strings.Contains(err.Error(), want) {
			t.Errorf("mode %s: %q does not name %s", mode, err, want)
		}
	}
	res, err := r.Run(context.Background(), plainSpec(t, "print"))
	if err != nil || res.ExitCode != 3 {
		t.Fatalf("mode off: Run = %+v, %v; want exit code 3", res, err)
	}
}
