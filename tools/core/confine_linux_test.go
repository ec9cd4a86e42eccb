package core

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nexuscocreate/nexus/tools"
)

// TestSwapRace swaps a directory of the workspace with a symlink (to
// outside, to an absolute path, into .nexus/) again and again while other
// goroutines read, write, edit, list and search through it. Nothing outside
// or private may be read or changed. The swaps are atomic exchanges, a
// bounded number of them; the callers run until the swapper is done.
func TestSwapRace(t *testing.T) {
	for _, target := range []string{"../outside/dir", "abs", ".nexus/run"} {
		t.Run(strings.ReplaceAll(target, "/", "_"), func(t *testing.T) {
			e := newEnv(t)
			if target == "abs" {
				target = filepath.Join(e.outside, "dir")
			}
			e.write(filepath.Join(e.outside, "dir", "f.txt"), "outside f\n")
			e.write(filepath.Join(e.outside, "dir", "only-outside.txt"), "outside only\n")
			e.file(".nexus/run/f.txt", "private f\n")
			e.file(".nexus/run/only-private.txt", "private only\n")
			e.file("swap/f.txt", "inside f\n")
			e.symlink(target, "hold")
			swap, hold := filepath.Join(e.ws, "swap"), filepath.Join(e.ws, "hold")
			if err := unix.Renameat2(unix.AT_FDCWD, swap, unix.AT_FDCWD, hold, unix.RENAME_EXCHANGE); err != nil {
				t.Skip("no atomic exchange of names here:", err)
			}
			before := snapshot(t, e.guarded()...)

			const swaps = 3000
			done := make(chan struct{})
			var wg sync.WaitGroup
			var calls, leaks atomic.Int64
			check := func(tool string, out json.RawMessage, err error) {
				calls.Add(1)
				if err != nil {
					var te *tools.Error
					if !errors.As(err, &te) {
						t.Errorf("%s: %v is not a tool error", tool, err)
					}
					return
				}
				s := string(out)
				if strings.Contains(s, "outside") || strings.Contains(s, "private") {
					leaks.Add(1)
					t.Errorf("%s read through the swapped link: %s", tool, s)
				}
			}
			callers := []func(){
				func() {
					out, err := e.call("read_file", map[string]any{"path": "swap/f.txt"})
					check("read_file", out, err)
				},
				func() {
					out, err := e.call("write_file", map[string]any{"path": "swap/f.txt", "content": "inside f\n"})
					check("write_file", out, err)
				},
				func() {
					out, err := e.call("write_file", map[string]any{"path": "swap/new/g.txt", "content": "inside g\n"})
					check("write_file", out, err)
				},
				func() {
					out, err := e.call("edit_file", map[string]any{"path": "swap/f.txt", "oldText": "f\n", "newText": "f\n"})
					check("edit_file", out, err)
				},
				func() {
					out, err := e.call("list_directory", map[string]any{"path": "swap", "recursive": true})
					check("list_directory", out, err)
				},
				func() {
					out, err := e.call("search_files", map[string]any{"path": "swap", "pattern": "f"})
					check("search_files", out, err)
				},
			}
			for _, c := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-done:
							return
						default:
						}
						c()
					}
				}()
			}
			for range swaps {
				if err := unix.Renameat2(unix.AT_FDCWD, swap, unix.AT_FDCWD, hold, unix.RENAME_EXCHANGE); err != nil {
					t.Fatal(err)
				}
			}
			close(done)
			wg.Wait()
			if calls.Load() == 0 {
				t.Fatal("no call ran during the swaps")
			}
			t.Logf("%d calls during %d swaps", calls.Load(), swaps)
			sameSnapshot(t, before, snapshot(t, e.guarded()...))
		})
	}
}
