package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// setSeen rewrites the saved stat cache as if each file had been seen at
// its change time plus after.
func setSeen(t *testing.T, hist string, after time.Duration) {
	t.Helper()
	c := newStatCache(filepath.Join(hist, "nexus-stat.cache"))
	if len(c.entries) == 0 {
		t.Fatal("no stat cache was saved")
	}
	for p, e := range c.entries {
		e.seen = e.key.ctime + int64(after)
		c.entries[p] = e
	}
	c.dirty = true
	if err := c.save(); err != nil {
		t.Fatal(err)
	}
}

// needStatCache skips a test of the stat cache where the system gives no
// change time and inode to key it (Windows: see stat_windows.go).
func needStatCache(t *testing.T) {
	info, err := os.Stat(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := statKeyOf(info); !ok {
		t.Skip("no stat cache here: every scan reads every file")
	}
}

func TestStatCacheSparesUnchangedFiles(t *testing.T) {
	needStatCache(t)
	const n = 20
	dir := t.TempDir()
	s := openTestStore(t, dir)
	for i := range n {
		mustSetDef(t, s, fmt.Sprintf("d%d/f%d.md", i%3, i), fmt.Sprintf("content %02d\n", i))
	}
	// The store's own writes are not cached (a stat after the write could
	// be of someone else's); a scan reads the files and caches them.
	if err := s.Rescan(); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Seen within racyMargin of their last change, the stats do not vouch
	// for the content: a write in the same clock tick would not show.
	setSeen(t, s.hist, racyMargin/2)
	s = openTestStore(t, dir)
	if h, m := s.stats.hits.Load(), s.stats.misses.Load(); h != 0 || m != n {
		t.Errorf("files seen just after a change: %d hits, %d misses; want 0, %d", h, m, n)
	}
	s.Close()

	// Seen long after: no file is read.
	setSeen(t, s.hist, time.Hour)
	s = openTestStore(t, dir)
	if h, m := s.stats.hits.Load(), s.stats.misses.Load(); h != n || m != 0 {
		t.Errorf("files seen long after a change: %d hits, %d misses; want %d, 0", h, m, n)
	}

	// An edit that keeps the size and the modification time changes the
	// change time: the file is read, and the edit recorded.
	full := filepath.Join(s.dir, "d1", "f1.md")
	info, err := os.Stat(full)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte("CONTENT 01\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(full, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := s.Rescan(); err != nil {
		t.Fatal(err)
	}
	if h, m := s.stats.hits.Load(), s.stats.misses.Load(); h != 2*n-1 || m != 1 {
		t.Errorf("rescan after one edit: %d hits, %d misses in all; want %d, 1", h, m, 2*n-1)
	}
	if got := s.log(t, "d1/f1.md"); len(got) != 2 || !strings.HasPrefix(got[0], "disk: ") {
		t.Errorf("history of the edited file = %q", got)
	}
	if f, err := s.Get("d1/f1.md", ""); err != nil || string(f.Content) != "CONTENT 01\n" {
		t.Errorf("the edited file = %q, %v", f.Content, err)
	}
	s.Close()

	// A damaged cache is an empty one: every file is read, and nothing
	// is taken for an edit.
	cache := filepath.Join(s.hist, "nexus-stat.cache")
	data, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(cache, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	if h, m := s.stats.hits.Load(), s.stats.misses.Load(); h != 0 || m != n {
		t.Errorf("with a damaged cache: %d hits, %d misses; want 0, %d", h, m, n)
	}
	if got := s.diskCommits(t); !mapsEqual(got, map[string]int{"d1/f1.md": 1}) {
		t.Errorf("disk commits = %v", got)
	}
	s.fsck(t)
}

// A file removed from disk leaves the cache, and one created again at its
// path (a new inode) is read.
func TestStatCacheForgetsRemovedFiles(t *testing.T) {
	needStatCache(t)
	dir := t.TempDir()
	s := openTestStore(t, dir)
	mustSetDef(t, s, "a.md", "one\n")
	mustSetDef(t, s, "b.md", "two\n")
	if err := s.Rescan(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	setSeen(t, s.hist, time.Hour)

	s = openTestStore(t, dir)
	if err := os.Remove(filepath.Join(s.dir, "a.md")); err != nil {
		t.Fatal(err)
	}
	if err := s.Rescan(); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.stats.entries["a.md"]; ok {
		t.Error("the removed file is still in the stat cache")
	}
	if err := os.WriteFile(filepath.Join(s.dir, "a.md"), []byte("ONE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Rescan(); err != nil {
		t.Fatal(err)
	}
	if f, err := s.Get("a.md", ""); err != nil || string(f.Content) != "ONE\n" {
		t.Errorf("a.md = %q, %v", f.Content, err)
	}
	if got := s.log(t, "a.md"); len(got) != 3 {
		t.Errorf("history of a.md = %q; want the set, the deletion and the new file", got)
	}
}
