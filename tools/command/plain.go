package command

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/nexuscocreate/nexus/internal/proctree"
)

// runPlain runs the command as a child of the daemon, without the helper:
// in a process tree of its own (internal/proctree: a process group on
// unix, a Job Object on Windows), with exactly its environment, killed
// whole on timeout, on cancellation and once it has exited, its output
// capped. Nothing confines it; only Windows bounds its processes (the
// job's limit). Outside Linux it is how Off mode runs.
func (r *Runner) runPlain(ctx context.Context, spec Spec) (Result, error) {
	cmd, err := plainCommand(&spec)
	if err != nil {
		// As a shell says it: 127 for a program that is not there, 126
		// for one that cannot be run.
		code := 126
		if errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		return Result{ExitCode: code, Stderr: fmt.Sprintf("nexus: %s: %v\n", spec.argv0(), err)}, nil
	}
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("command: %w", err)
	}
	stderr, stderrW, err := os.Pipe()
	if err != nil {
		stdout.Close()
		stdoutW.Close()
		return Result{}, fmt.Errorf("command: %w", err)
	}
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	start := time.Now()
	if spec.Stdin != nil {
		stdin, err := feed(spec.Stdin, start.Add(spec.Timeout+outputGrace))
		if err != nil {
			stdout.Close()
			stdoutW.Close()
			stderr.Close()
			stderrW.Close()
			return Result{}, err
		}
		cmd.Stdin = stdin
		defer stdin.Close()
	}
	tree, err := proctree.Start(cmd, proctree.Options{MaxProcesses: spec.maxProcs()})
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdout.Close()
		stderr.Close()
		var pe *os.PathError
		if errors.As(err, &pe) {
			return Result{ExitCode: 126, Stderr: fmt.Sprintf("nexus: %s: %v\n", spec.argv0(), err)}, nil
		}
		return Result{}, fmt.Errorf("command: starting %s: %w", spec.argv0(), err)
	}
	defer tree.Release()

	out := newCapture(spec.OutputLimit)
	var readers sync.WaitGroup
	readers.Go(func() { drain(stdout, func(b []byte) { out.write(0, b) }) })
	readers.Go(func() { drain(stderr, func(b []byte) { out.write(1, b) }) })
	exited := make(chan struct{})
	go func() {
		cmd.Wait() // the pipes are files: Wait does not wait for them
		close(exited)
	}()

	var timedOut, cancelled bool
	timer := time.NewTimer(spec.Timeout)
	select {
	case <-exited:
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		cancelled = true
	}
	timer.Stop()
	// The whole tree: on timeout or cancellation the command too; else
	// what it left behind.
	if err := tree.Kill(); err != nil {
		r.logger.Warn("command: killing the process tree", "err", err)
	}
	<-exited
	dur := time.Since(start)

	// The tree is gone; a process that left it may still hold the pipes.
	read := make(chan struct{})
	go func() {
		readers.Wait()
		close(read)
	}()
	grace := time.NewTimer(outputGrace)
	select {
	case <-read:
	case <-grace.C:
	}
	grace.Stop()
	stdout.Close() // ends a pending read
	stderr.Close()
	<-read

	res := Result{TimedOut: timedOut, Cancelled: cancelled, Duration: dur}
	res.Stdout, res.Stderr, res.Truncated = out.result()
	var byItself bool
	res.ExitCode, res.Signal, byItself = exitOf(cmd.ProcessState, timedOut || cancelled)
	if byItself {
		// The command exited on its own, however close to the deadline.
		res.TimedOut, res.Cancelled = false, false
	}
	return res, nil
}

// argv0 is the program the spec runs, for messages.
func (s *Spec) argv0() string {
	if s.Shell != "" {
		return "shell"
	}
	return s.Argv[0]
}
