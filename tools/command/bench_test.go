package command

import (
	"context"
	"os"
	"path/filepath"
	"testing"
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
			for b.Loop() {
				res, err := r.Run(context.Background(), spec)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}

// BenchmarkCommandFilter assembles the seccomp filter, which every helper
// does once.
func BenchmarkCommandFilter(b *testing.B) {
	for b.Loop() {
		if _, err := commandFilter(); err != nil {
			b.Fatal(err)
		}
	}
}
