package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/events"
)

// gatedStore opens a store whose committer stops at its first commit
// (entered is closed then) until release is called, so that the writes
// queued meanwhile form one group.
func gatedStore(t *testing.T) (ts *testStore, entered <-chan struct{}, release func()) {
	t.Helper()
	dir := t.TempDir()
	gate, in := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s, err := OpenDefinitions(DefinitionsOptions{
		Dir:        filepath.Join(dir, "defs"),
		HistoryDir: filepath.Join(dir, "history.git"),
		Bus:        events.New(),
		Now: func() time.Time {
			once.Do(func() {
				close(in)
				<-gate
			})
			return time.Now()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var closeOnce sync.Once
	return &testStore{s, filepath.Join(dir, "defs"), filepath.Join(dir, "history.git")}, in,
		func() { closeOnce.Do(func() { close(gate) }) }
}

// awaitQueued waits until n writes wait in the queue.
func (ts *testStore) awaitQueued(n int) {
	for ts.queued() < n {
		runtime.Gosched()
	}
}

// reflogLines returns the lines of the branch's reflog, oldest first.
func (ts *testStore) reflogLines(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ts.hist, "logs", branchRef))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// TestGroupCommit queues 15 writes while the committer is busy with a
// first one: they become one group (one ref update), and the history shows
// each as its own commit, in queue order, with its own author and message,
// as git sees it.
func TestGroupCommit(t *testing.T) {
	s, entered, release := gatedStore(t)
	type result struct {
		rev string
		err error
	}
	results := make([]result, 16)
	var wg sync.WaitGroup
	write := func(i int) {
		p := fmt.Sprintf("w%02d/file.md", i)
		rev, err := s.Set(p, fmt.Appendf(nil, "write %d\n", i), WriteOptions{Author: AppAuthor(fmt.Sprint("app", i)), Message: fmt.Sprintf("write %d", i)})
		results[i] = result{rev, err}
	}
	wg.Go(func() { write(0) })
	<-entered
	for i := 1; i < 16; i++ {
		wg.Go(func() { write(i) })
		s.awaitQueued(i) // queue order is write order
	}
	release()
	wg.Wait()

	for i, r := range results {
		if r.err != nil {
			t.Fatalf("write %d: %v", i, r.err)
		}
		f, err := s.Get(fmt.Sprintf("w%02d/file.md", i), "")
		if err != nil || string(f.Content) != fmt.Sprintf("write %d\n", i) || f.Revision != r.rev {
			t.Errorf("write %d read back as %q at %s, %v; want it at %s", i, f.Content, f.Revision, err, r.rev)
		}
	}
	if got := s.reflogLines(t); len(got) != 2 {
		t.Errorf("reflog has %d ref updates, want 2 (the first write, then a group of 15):\n%s", len(got), strings.Join(got, "\n"))
	}
	// git sees 16 commits, one per write, newest first, each the parent of
	// the next.
	log := strings.Split(strings.TrimSpace(s.git(t, "log", "--format=%H %P|%an|%s", "main")), "\n")
	if len(log) != 16 {
		t.Fatalf("git log has %d commits, want 16:\n%s", len(log), strings.Join(log, "\n"))
	}
	for k, line := range log {
		i := 15 - k
		hashes, rest, _ := strings.Cut(line, "|")
		h := strings.Fields(hashes)
		if h[0] != results[i].rev {
			t.Errorf("commit %d of git log is %s, want write %d's %s", k, h[0], i, results[i].rev)
		}
		if i > 0 && (len(h) != 2 || h[1] != results[i-1].rev) {
			t.Errorf("write %d's commit has parents %v, want write %d's %s", i, h[1:], i-1, results[i-1].rev)
		}
		if want := fmt.Sprintf("app:app%d|write %d", i, i); rest != want {
			t.Errorf("write %d's commit is %q, want %q", i, rest, want)
		}
	}
	if h, _, err := s.History("w07/file.md", 0, ""); err != nil || len(h) != 1 || h[0].Revision != results[7].rev {
		t.Errorf("history of w07/file.md = %+v, %v", h, err)
	}
	s.fsck(t)

	// The index the group appended is the one a reopen reads.
	s.Close()
	r := openTestStore(t, filepath.Dir(s.dir))
	if r.Head() != results[15].rev {
		t.Errorf("reopened at %s, want %s", r.Head(), results[15].rev)
	}
	if len(r.diskCommits(t)) != 0 {
		t.Errorf("the reopen found disk edits: %v", r.diskCommits(t))
	}
}

// TestGroupCommitFailsAlone puts failing writes in one group with good
// ones: each failure is its own, with its own error, and the good writes
// land as one unbroken chain of commits.
func TestGroupCommitFailsAlone(t *testing.T) {
	s, entered, release := gatedStore(t)
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := s.Set("first", []byte("1"), WriteOptions{Author: "cli"}); err != nil {
			t.Error(err)
		}
	})
	<-entered
	type write struct {
		name string
		do   func() (string, error)
		want error // nil: it lands
	}
	writes := []write{
		{"good a", func() (string, error) { return s.Set("a/one.md", []byte("a"), WriteOptions{Author: "cli"}) }, nil},
		{"stale", func() (string, error) {
			return s.Set("b.md", []byte("b"), WriteOptions{Author: "cli", ExpectedRevision: strings.Repeat("1", 40)})
		}, ErrConflict},
		{"dir in the way", func() (string, error) { return s.Set("a", []byte("x"), WriteOptions{Author: "cli"}) }, ErrInvalid},
		{"delete missing", func() (string, error) { return s.Delete("nothing.md", WriteOptions{Author: "cli"}) }, ErrNotFound},
		{"diff that does not apply", func() (string, error) {
			rev, _, err := s.ApplyDiff("first", "@@ -1 +1 @@\n-nope\n+x\n", WriteOptions{Author: "cli"})
			return rev, err
		}, ErrPatch},
		{"good c", func() (string, error) { return s.Set("c.md", []byte("c"), WriteOptions{Author: "cli"}) }, nil},
		{"absent, created", func() (string, error) {
			return s.Set("d.md", []byte("d1"), WriteOptions{Author: "cli", ExpectedRevision: ExpectAbsent})
		}, nil},
		// The same path again in the same batch: it waits for the next
		// group, where it is no longer absent.
		{"absent, but just created", func() (string, error) {
			return s.Set("d.md", []byte("d2"), WriteOptions{Author: "cli", ExpectedRevision: ExpectAbsent})
		}, ErrConflict},
		{"same path, later", func() (string, error) { return s.Set("c.md", []byte("c2"), WriteOptions{Author: "cli"}) }, nil},
	}
	revs := make([]string, len(writes))
	errs := make([]error, len(writes))
	for i, w := range writes {
		wg.Go(func() { revs[i], errs[i] = w.do() })
		s.awaitQueued(i + 1)
	}
	release()
	wg.Wait()
	landed := 1
	for i, w := range writes {
		switch {
		case w.want == nil && errs[i] != nil:
			t.Errorf("%s: %v", w.name, errs[i])
		case w.want != nil && !errors.Is(errs[i], w.want):
			t.Errorf("%s: %v, want %v", w.name, errs[i], w.want)
		case w.want != nil && revs[i] != "":
			t.Errorf("%s failed with a revision %q", w.name, revs[i])
		case w.want == nil:
			landed++
		}
	}
	if n := len(strings.Fields(s.git(t, "rev-list", "main"))); n != landed {
		t.Errorf("%d commits, want %d (one per write that landed)", n, landed)
	}
	for path, want := range map[string]string{"a/one.md": "a", "c.md": "c2", "d.md": "d1", "first": "1"} {
		if f, err := s.Get(path, ""); err != nil || string(f.Content) != want {
			t.Errorf("%s = %q, %v; want %q", path, f.Content, err, want)
		}
		if data, err := os.ReadFile(filepath.Join(s.dir, path)); err != nil || string(data) != want {
			t.Errorf("%s on disk = %q, %v; want %q", path, data, err, want)
		}
	}
	if got := s.log(t, "c.md"); len(got) != 2 {
		t.Errorf("c.md has %d commits, want both writes: %q", len(got), got)
	}
	s.fsck(t)
}

// TestCloseFailsQueuedWrites: writes that are queued when the store closes
// fail with ErrClosed, none half made; the one in progress lands.
func TestCloseFailsQueuedWrites(t *testing.T) {
	s, entered, release := gatedStore(t)
	var wg sync.WaitGroup
	var firstErr error
	wg.Go(func() { _, firstErr = s.Set("first", []byte("1"), WriteOptions{Author: "cli"}) })
	<-entered
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { _, errs[i] = s.Set(fmt.Sprintf("queued%d", i), []byte("q"), WriteOptions{Author: "cli"}) })
		s.awaitQueued(i + 1)
	}
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	for {
		s.queueMu.Lock()
		stopping := s.stopping
		s.queueMu.Unlock()
		if stopping {
			break
		}
		runtime.Gosched()
	}
	release()
	wg.Wait()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if firstErr != nil {
		t.Errorf("the write in progress: %v", firstErr)
	}
	for i, err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("queued write %d: %v, want ErrClosed", i, err)
		}
	}
	if _, err := s.Set("late", []byte("x"), WriteOptions{Author: "cli"}); !errors.Is(err, ErrClosed) {
		t.Errorf("write after Close: %v, want ErrClosed", err)
	}
	r := openTestStore(t, filepath.Dir(s.dir))
	if f, err := r.Get("first", ""); err != nil || string(f.Content) != "1" {
		t.Errorf("first after reopen: %q, %v", f.Content, err)
	}
	if n := len(strings.Fields(r.git(t, "rev-list", "main"))); n != 1 {
		t.Errorf("%d commits after reopen, want 1", n)
	}
}

// TestGroupFailsWhole: a group that cannot move the ref (a git command holds
// its lock) fails every write in it, and leaves neither the history nor the
// definitions root changed; the writes after it work again once the lock
// is gone.
func TestGroupFailsWhole(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	mustSetDef(t, s, "keep.md", "kept\n")
	head := s.Head()
	lock := filepath.Join(s.hist, branchRef+".lock")
	if err := os.WriteFile(lock, []byte("held by git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = s.Set(fmt.Sprintf("new/%d.md", i), []byte("x"), WriteOptions{Author: "cli"})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "is a git command running") {
			t.Errorf("write %d with the ref locked: %v", i, err)
		}
	}
	if s.Head() != head {
		t.Errorf("HEAD moved to %s", s.Head())
	}
	if _, err := os.Stat(filepath.Join(s.dir, "new")); !errors.Is(err, os.ErrNotExist) {
		entries, _ := os.ReadDir(filepath.Join(s.dir, "new"))
		for _, e := range entries {
			t.Errorf("left in the definitions root: new/%s", e.Name())
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(s.hist, "nexus-tmp")); len(entries) != 0 {
		t.Errorf("%d temporary files left", len(entries))
	}
	if data, _ := os.ReadFile(lock); string(data) != "held by git\n" {
		t.Errorf("the lock git holds was changed: %q", data)
	}
	os.Remove(lock)
	mustSetDef(t, s, "new/after.md", "y")
	s.fsck(t)
}
