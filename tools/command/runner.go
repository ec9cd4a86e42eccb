package command

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// outputGrace is how long Run still reads output after the command's tree
// is gone. It only runs out when a process outside the tree holds the
// pipes (a setsid child, without a PID namespace).
const outputGrace = time.Second

// RunnerOptions configures a Runner.
type RunnerOptions struct {
	// HelperPath is the executable that runs HelperMain when its first
	// argument is HelperArg; the default is os.Executable(). Only Linux
	// runs commands through the helper.
	HelperPath string
	Logger     *slog.Logger
}

// Runner runs commands. It is safe for concurrent use.
type Runner struct {
	logger *slog.Logger
	platform
}

// NewRunner returns a Runner.
func NewRunner(opts RunnerOptions) *Runner {
	r := &Runner{logger: opts.Logger}
	r.platform.init(opts)
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	return r
}

// Run starts the command and waits for it. The timeout and the
// cancellation of ctx kill the command's whole tree; Run returns soon
// after. The error is non-nil only when the command could not be run at
// all: a bad spec, a context already done, or a sandbox that cannot be
// enforced ([ErrSandboxUnavailable]: always, outside Linux, for the
// sandboxed modes). A command that ran and failed is a Result with its
// exit code or signal.
func (r *Runner) Run(ctx context.Context, spec Spec) (Result, error) {
	if err := spec.validate(); err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return r.run(ctx, spec)
}

// feed returns the read end of a pipe, for a command's standard input,
// and writes data to its write end in the background until deadline, then
// closes it. The caller closes the read end once the command has started.
func feed(data []byte, deadline time.Time) (*os.File, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("command: standard input: %w", err)
	}
	pw.SetWriteDeadline(deadline) // where pipes have none, the command's end ends the write
	go func() {
		pw.Write(data)
		pw.Close()
	}()
	return pr, nil
}

// drain reads f until EOF, an error or its closing, giving what it reads
// to keep.
func drain(f *os.File, keep func([]byte)) {
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			keep(buf[:n])
		}
		if err != nil {
			return
		}
	}
}
