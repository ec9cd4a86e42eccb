//go:build !linux

package command

import (
	"context"
	"runtime"
)

// platform is the state of a Runner outside Linux: none.
type platform struct{}

func (*platform) init(RunnerOptions) {}

// run refuses the sandboxed modes, which only Linux has, and runs Off mode
// as a plain child (runPlain).
func (r *Runner) run(ctx context.Context, spec Spec) (Result, error) {
	if spec.Mode != Off {
		return Result{}, noSandbox(runtime.GOOS, runtime.GOARCH)
	}
	return r.runPlain(ctx, spec)
}
