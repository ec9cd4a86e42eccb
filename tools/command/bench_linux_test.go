package command

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRunTrue runs `true` as execute_command does in each mode: the
// helper's start, the view, Landlock, the seccomp filter, the dropping of
// capabilities, and the command.
func BenchmarkRunTrue(b *testing.B) {
	ws := b.TempDir()
	for _, d := range []string{".nexus/run", ".git/hooks"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	view := &View{Hide: []string{filepath.Join(ws, ".nexus")}, ReadOnly: []string{filepath.Join(ws, ".git")}}
	for _, mode := range []Mode{Off, ReadOnly, WorkspaceWrite} {
		b.Run(string(mode), func(b *testing.B) {
			r := NewRunner(RunnerOptions{HelperPath: os.Args[0]})
			spec := Spec{Argv: []string{"/bin/true"}, Dir: ws, Workspace: ws, Mode: mode, View: view,
				Timeout: hangGuard, OutputLimit: 1 << 16, Env: []string{"PATH=/usr/bin:/bin"}}
			var before, after syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
			for b.Loop() {
				res, err := r.Run(context.Background(), spec)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%v %+v", err, res)
				}
			}
			// The CPU time of the helpers and commands, which a loaded
			// machine disturbs less than the wall clock.
			syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
			cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "child-cpu-ns/op")
		})
	}
}
