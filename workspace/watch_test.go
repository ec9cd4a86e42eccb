package workspace

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// recorder keeps what a watcher reported.
type recorder struct {
	mu      sync.Mutex
	calls   [][]string
	count   map[string]int // reports per path
	rescans int
	errs    []error
}

func (r *recorder) counts(p string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count[p]
}

func startWatcher(t *testing.T, root string, debounce time.Duration, ignore func(string) bool) (*watcher, *recorder) {
	t.Helper()
	r := &recorder{count: map[string]int{}}
	w, err := newWatcher(WatchOptions{
		Root:     root,
		Debounce: debounce,
		Ignore:   ignore,
		OnChange: func(rel []string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if !slices.IsSorted(rel) || len(slices.Compact(slices.Clone(rel))) != len(rel) {
				r.errs = append(r.errs, fmt.Errorf("OnChange(%q): not sorted and unique", rel))
			}
			r.calls = append(r.calls, rel)
			for _, p := range rel {
				r.count[p]++
			}
		},
		OnRescan: func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.rescans++
		},
		OnError: func(err error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.errs = append(r.errs, err)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.close(); err != nil {
			t.Errorf("close: %v", err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, err := range r.errs {
			t.Errorf("watcher error: %v", err)
		}
	})
	return w, r
}

// await polls cond until it holds; the deadline only keeps a broken test
// from hanging.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// barrier writes a new file and waits for its report: every event made
// before it has been seen, and every path that settled before it reported.
func barrier(t *testing.T, root string, r *recorder) {
	t.Helper()
	name := fmt.Sprintf("barrier-%d", time.Now().UnixNano())
	write(t, root, name, "")
	await(t, "the report of "+name, func() bool { return r.counts(name) > 0 })
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWatchOneSaveOneReport(t *testing.T) {
	root := t.TempDir()
	write(t, root, "before.md", "x")
	_, r := startWatcher(t, root, 50*time.Millisecond, nil)
	write(t, root, "a.md", "one")
	await(t, "a.md", func() bool { return r.counts("a.md") > 0 })
	barrier(t, root, r)
	if n := r.counts("a.md"); n != 1 {
		t.Errorf("a.md reported %d times, want 1", n)
	}
	if n := r.counts("before.md"); n != 0 {
		t.Errorf("a file not touched since the start was reported %d times", n)
	}
}

func TestWatchBurstIsOneReport(t *testing.T) {
	root := t.TempDir()
	// The burst must fit in the quiet time even on a slow machine.
	_, r := startWatcher(t, root, 500*time.Millisecond, nil)
	f, err := os.Create(filepath.Join(root, "burst.log"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		fmt.Fprintf(f, "line %d\n", i)
	}
	f.Close()
	await(t, "burst.log", func() bool { return r.counts("burst.log") > 0 })
	barrier(t, root, r)
	if n := r.counts("burst.log"); n != 1 {
		t.Errorf("20 writes reported %d times, want 1", n)
	}
}

func TestWatchNewDirectories(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	_, r := startWatcher(t, root, 20*time.Millisecond, nil)

	// Made at once, faster than the watcher can add the new directories.
	write(t, root, "a/b/c/f.md", "f")
	write(t, root, "a/b/g.md", "g")
	// A tree moved in whole.
	write(t, outside, "tree/x/y.md", "y")
	write(t, outside, "tree/z.md", "z")
	if err := os.Rename(filepath.Join(outside, "tree"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "a/b/c/f.md", "a/b/g.md", "moved", "moved/x/y.md", "moved/z.md"}
	await(t, fmt.Sprint(want), func() bool {
		return !slices.ContainsFunc(want, func(p string) bool { return r.counts(p) == 0 })
	})

	// The new directories are watched.
	write(t, root, "a/b/c/later.md", "l")
	write(t, root, "moved/x/later.md", "l")
	await(t, "files in the new directories", func() bool {
		return r.counts("a/b/c/later.md") > 0 && r.counts("moved/x/later.md") > 0
	})
}

func TestWatchRemoveAndRename(t *testing.T) {
	root := t.TempDir()
	write(t, root, "gone.md", "x")
	write(t, root, "dir/sub/f.md", "x")
	write(t, root, "old/sub/f.md", "x")
	_, r := startWatcher(t, root, 20*time.Millisecond, nil)

	os.Remove(filepath.Join(root, "gone.md"))
	os.RemoveAll(filepath.Join(root, "dir"))
	if err := os.Rename(filepath.Join(root, "old"), filepath.Join(root, "new")); err != nil {
		t.Fatal(err)
	}
	want := []string{"dir", "gone.md", "new", "new/sub", "new/sub/f.md", "old"}
	await(t, fmt.Sprint(want), func() bool {
		return !slices.ContainsFunc(want, func(p string) bool { return r.counts(p) == 0 })
	})

	// Below the renamed directory, paths are the new ones.
	write(t, root, "new/sub/after.md", "a")
	await(t, "new/sub/after.md", func() bool { return r.counts("new/sub/after.md") > 0 })
	if n := r.counts("old/sub/after.md"); n != 0 {
		t.Errorf("a file in a moved directory was reported under its old path")
	}
}

func TestWatchIgnoreAndSymlinks(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write(t, outside, "real/f.md", "x")
	ignore := func(rel string) bool { return strings.HasPrefix(filepath.Base(rel), ".tmp-") }
	_, r := startWatcher(t, root, 20*time.Millisecond, ignore)

	write(t, root, ".tmp-123", "x")
	write(t, root, ".tmp-dir/f.md", "x")
	if err := os.Symlink(filepath.Join(outside, "real"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	await(t, "link", func() bool { return r.counts("link") > 0 })
	write(t, outside, "real/f.md", "changed through the link")
	barrier(t, root, r)
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range r.count {
		if p != "link" && !strings.HasPrefix(p, "barrier-") {
			t.Errorf("reported %s", p)
		}
	}
}

func TestWatchManyFilesAtOnce(t *testing.T) {
	const n = 2000
	for _, tc := range []struct {
		name   string
		create func(t *testing.T, root string)
	}{
		{"written", func(t *testing.T, root string) {
			for i := range n {
				write(t, root, fmt.Sprintf("d%d/f%04d.md", i%10, i), "x")
			}
		}},
		{"moved in", func(t *testing.T, root string) {
			tree := filepath.Join(t.TempDir(), "tree")
			for i := range n {
				write(t, tree, fmt.Sprintf("d%d/f%04d.md", i%10, i), "x")
			}
			if err := os.Rename(tree, filepath.Join(root, "tree")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			_, r := startWatcher(t, root, DefaultDebounce, nil)
			start := time.Now()
			tc.create(t, root)
			created := time.Since(start)
			files := func() int {
				r.mu.Lock()
				defer r.mu.Unlock()
				files := 0
				for p := range r.count {
					if strings.HasSuffix(p, ".md") {
						files++
					}
				}
				return files
			}
			await(t, fmt.Sprintf("%d files", n), func() bool { return files() == n })
			r.mu.Lock()
			defer r.mu.Unlock()
			// A file reported twice is no error (the open and the write of one
			// file may be a quiet time apart on a loaded machine), but it is
			// worth seeing.
			again := 0
			for _, c := range r.count {
				again += c - 1
			}
			t.Logf("%d files made in %v, all reported after %v in %d OnChange calls (%d paths again), %d rescans",
				n, created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), len(r.calls), again, r.rescans)
		})
	}
}

func TestWatchOverflowRescans(t *testing.T) {
	root := t.TempDir()
	write(t, root, "missed/f.md", "x")
	// Long enough for the three overflows to be one burst.
	w, r := startWatcher(t, root, 200*time.Millisecond, nil)

	// Lose the watch of a directory, as when its creation was among the
	// lost events, then lose events.
	if err := w.fsw.Remove(filepath.Join(root, "missed")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		w.fsw.Errors <- fsnotify.ErrEventOverflow
	}
	await(t, "a rescan", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.rescans > 0
	})
	write(t, root, "missed/g.md", "after the rescan")
	await(t, "missed/g.md", func() bool { return r.counts("missed/g.md") > 0 })
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rescans != 1 {
		t.Errorf("%d rescans for one burst of overflows, want 1", r.rescans)
	}
}

func TestWatchCloseStops(t *testing.T) {
	root := t.TempDir()
	w, r := startWatcher(t, root, time.Hour, nil)
	write(t, root, "never.md", "x")
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	if err := w.close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) != 0 {
		t.Errorf("reports after close: %v", r.calls)
	}
}

func TestWatch(t *testing.T) {
	root := t.TempDir()
	write(t, root, "file", "x")
	for _, p := range []string{filepath.Join(root, "missing"), filepath.Join(root, "file")} {
		if err := Watch(t.Context(), WatchOptions{Root: p}); err == nil {
			t.Errorf("Watch(%s): no error", p)
		}
	}

	// Reports until ctx ends, then returns nil.
	ctx, cancel := context.WithCancel(t.Context())
	reported := make(chan []string, 1)
	done := make(chan error)
	go func() {
		done <- Watch(ctx, WatchOptions{Root: root, Debounce: 10 * time.Millisecond, OnChange: func(rel []string) {
			select {
			case reported <- rel:
			default:
			}
		}})
	}()
	// The watches are in place at some point after the start: write until
	// a report comes.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		if time.Now().After(deadline) {
			t.Fatal("no report")
		}
		write(t, root, "file", fmt.Sprint(i))
		select {
		case rel := <-reported:
			if !slices.Equal(rel, []string{"file"}) {
				t.Errorf("reported %q, want [file]", rel)
			}
		case <-time.After(50 * time.Millisecond):
			continue
		}
		break
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch returned %v when ctx ended", err)
	}
}

// TestWatchSymlinkSwapRace is the rename race of issue 11: directories in
// the watched tree are created, written in, moved aside and replaced by
// symlinks (to a watched sibling and to the root's parent), and removed,
// while the watcher adds and drops their watches. Each case runs a fixed
// number of rounds; the watcher must come through alive and still report,
// must never report a file of the root's parent (it would have watched
// through a symlink), and must end watching exactly the tree.
func TestWatchSymlinkSwapRace(t *testing.T) {
	const rounds = 200
	for _, tc := range []struct {
		name string
		// dir is an app's directory in round i.
		dir func(app string, i int) string
		// round swaps the directory d with a symlink to target.
		round func(d, target string)
	}{
		{"moved aside", func(app string, i int) string { return fmt.Sprint(app, i) }, func(d, target string) {
			os.Mkdir(d, 0o755)
			os.Mkdir(filepath.Join(d, "sub"), 0o755)
			os.Rename(d, d+".old")
			os.Symlink(target, d)
		}},
		{"removed", func(app string, i int) string { return app }, func(d, target string) {
			old := d + ".old"
			os.Mkdir(d, 0o755)
			os.Mkdir(filepath.Join(d, "sub"), 0o755)
			os.Rename(d, old)
			os.Symlink(target, d)
			os.Remove(d)
			os.Rename(old, d) // back: a directory the watcher had
			os.Rename(d, old)
			os.Symlink(target, d)
			os.RemoveAll(old)
			os.Remove(d)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "defs")
			// What root/x/sub is through x -> .. and through x -> gamma.
			write(t, base, "sub/outside.txt", "outside")
			write(t, root, "gamma/sub/f.txt", "gamma")
			fds := inotifyFDs(t)
			_, r := startWatcher(t, root, 5*time.Millisecond, nil)

			// Every goroutine's errors are the race's, not the test's.
			var wg sync.WaitGroup
			stop := make(chan struct{})
			stopped := func() bool {
				select {
				case <-stop:
					return true
				default:
					return false
				}
			}
			// Edits in the root's parent: a report of one is a watch there.
			wg.Go(func() {
				for i := 0; !stopped(); i++ {
					os.WriteFile(filepath.Join(base, "sub", fmt.Sprintf("outside-%d.txt", i%8)), nil, 0o644)
				}
			})
			var swaps sync.WaitGroup
			for _, app := range []string{"alpha", "beta"} {
				var round atomic.Int64
				// The app's writes, in its directory, whatever that is.
				wg.Go(func() {
					for i := 0; !stopped(); i++ {
						d := tc.dir(app, int(round.Load()))
						os.WriteFile(filepath.Join(root, d, "sub", fmt.Sprintf("f%d.txt", i%8)), []byte(fmt.Sprint(i)), 0o644)
					}
				})
				swaps.Go(func() {
					for i := range rounds {
						round.Store(int64(i))
						target := "gamma"
						if i%2 == 1 {
							target = ".."
						}
						tc.round(filepath.Join(root, tc.dir(app, i)), target)
					}
				})
			}
			swaps.Wait()
			close(stop)
			wg.Wait()
			barrier(t, root, r)
			write(t, root, "gamma/sub/after.txt", "x")
			await(t, "gamma/sub/after.txt", func() bool { return r.counts("gamma/sub/after.txt") > 0 })
			r.mu.Lock()
			for p := range r.count {
				if strings.HasPrefix(path.Base(p), "outside") {
					t.Errorf("reported %s, a file of the root's parent", p)
				}
			}
			r.mu.Unlock()
			checkKernelWatches(t, fds, root, base, filepath.Join(base, "sub"))
		})
	}
}

// TestWatchNeverFollowsSymlinks: a symlink in the watched tree, to a
// directory outside it or to the root's parent, is never watched, whether
// it was there at the start, made later, or put in the place of a watched
// directory or of a directory above one; edits in the directory it leads to
// are not reported.
func TestWatchNeverFollowsSymlinks(t *testing.T) {
	symlink := func(t *testing.T, target, link string) {
		t.Helper()
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	rename := func(t *testing.T, from, to string) {
		t.Helper()
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// before runs before the watcher starts, after once it has.
		before, after func(t *testing.T, root, outside string)
	}{
		{"there at the start", func(t *testing.T, root, outside string) {
			symlink(t, outside, filepath.Join(root, "link"))
		}, nil},
		{"made later", nil, func(t *testing.T, root, outside string) {
			symlink(t, outside, filepath.Join(root, "link"))
		}},
		{"to the root's parent", nil, func(t *testing.T, root, outside string) {
			symlink(t, "..", filepath.Join(root, "up"))
		}},
		{"in place of a watched directory", func(t *testing.T, root, outside string) {
			write(t, root, "app/f.md", "x")
		}, func(t *testing.T, root, outside string) {
			rename(t, filepath.Join(root, "app"), filepath.Join(root, "app.old"))
			symlink(t, outside, filepath.Join(root, "app"))
		}},
		{"in place of a directory above a watched one", func(t *testing.T, root, outside string) {
			write(t, root, "app/sub/f.md", "x") // outside has a sub/ too
		}, func(t *testing.T, root, outside string) {
			rename(t, filepath.Join(root, "app"), filepath.Join(root, "app.old"))
			symlink(t, outside, filepath.Join(root, "app"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "root")
			outside := filepath.Join(base, "outside")
			write(t, root, "in.md", "x")
			write(t, outside, "f.md", "x")
			write(t, outside, "sub/g.md", "x")
			if tc.before != nil {
				tc.before(t, root, outside)
			}
			fds := inotifyFDs(t)
			_, r := startWatcher(t, root, 10*time.Millisecond, nil)
			if tc.after != nil {
				tc.after(t, root, outside)
			}
			barrier(t, root, r)
			r.mu.Lock()
			seen := maps.Clone(r.count)
			r.mu.Unlock()

			// Edits where the symlinks lead.
			write(t, outside, "f.md", "changed")
			write(t, outside, "sub/g.md", "changed")
			write(t, outside, "new.md", "new")
			write(t, outside, "newdir/h.md", "new")
			write(t, base, "top.md", "new")
			write(t, outside, "newdir/h.md", "changed in a new directory")
			barrier(t, root, r)
			r.mu.Lock()
			for p, n := range r.count {
				if n != seen[p] && !strings.HasPrefix(p, "barrier-") {
					t.Errorf("%s reported after edits outside the tree", p)
				}
			}
			r.mu.Unlock()
			checkKernelWatches(t, fds, root, base, outside, filepath.Join(outside, "sub"))
		})
	}
}

// TestWatchStartsWhileDirectoriesGo: the first watches are added while the
// directories are moved and removed; the start must not wait for itself.
func TestWatchStartsWhileDirectoriesGo(t *testing.T) {
	const rounds, dirs = 20, 200
	for range rounds {
		root := t.TempDir()
		for i := range dirs {
			write(t, root, fmt.Sprintf("d%d/f.md", i), "x")
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range dirs {
				d := filepath.Join(root, fmt.Sprintf("d%d", i))
				os.Rename(d, d+".old")
				os.RemoveAll(d + ".old")
			}
		}()
		w, err := newWatcher(WatchOptions{Root: root, OnError: func(error) {}})
		if err != nil {
			t.Fatal(err)
		}
		<-done
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
	}
}
