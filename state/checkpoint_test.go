package state

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCrashRestoresWorkingFiles plays a crash that lost the working files'
// writes after their commits were durable: the checkpoint is put back to
// before them, and the working files to what they held before. The next
// open writes them again from the history; an edit made on disk meanwhile
// is committed as "disk", as always; nothing else is committed.
func TestCrashRestoresWorkingFiles(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	mustSetDef(t, s, "a.md", "a1\n")
	mustSetDef(t, s, "gone.md", "gone1\n")
	mustSetDef(t, s, "edited.md", "e1\n")
	mustSetDef(t, s, "emptied.md", "x1\n")
	s.Close()
	ckpt := filepath.Join(s.hist, checkpointName)
	before, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}

	s = openTestStore(t, dir)
	mustSetDef(t, s, "a.md", "a2\n")
	mustSetDef(t, s, "a.md", "a3\n")
	mustSetDef(t, s, "new/b.md", "b1\n")
	if _, err := s.Delete("gone.md", WriteOptions{Author: "cli"}); err != nil {
		t.Fatal(err)
	}
	mustSetDef(t, s, "edited.md", "e2\n")
	mustSetDef(t, s, "emptied.md", "x2\n")
	head := s.Head()
	s.Close()

	// The crash: the checkpoint and the working files as they were.
	if err := os.WriteFile(ckpt, before, 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(p, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(s.dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.md", "a2\n") // the write of a3 lost: an older version is there
	if err := os.RemoveAll(filepath.Join(s.dir, "new")); err != nil {
		t.Fatal(err)
	}
	write("gone.md", "gone1\n")
	write("edited.md", "edited by hand\n") // not a version it had: an edit
	write("emptied.md", "")

	s = openTestStore(t, dir)
	for p, want := range map[string]string{"a.md": "a3\n", "new/b.md": "b1\n", "edited.md": "edited by hand\n", "emptied.md": "x2\n"} {
		data, err := os.ReadFile(filepath.Join(s.dir, p))
		if err != nil || string(data) != want {
			t.Errorf("%s on disk = %q, %v; want %q", p, data, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(s.dir, "gone.md")); !os.IsNotExist(err) {
		t.Errorf("deleted file is back on disk (%v)", err)
	}
	if h := s.mustHistory(t, "edited.md"); h[0].Author != AuthorDisk {
		t.Errorf("edit on disk: newest entry %+v, want a disk commit", h[0])
	}
	for _, p := range []string{"a.md", "new/b.md", "emptied.md"} {
		if h := s.mustHistory(t, p); h[0].Author == AuthorDisk {
			t.Errorf("%s: a restored file was committed from disk: %+v", p, h[0])
		}
	}
	if got := len(s.mustHistory(t, "edited.md")); got != 3 {
		t.Errorf("edited.md has %d entries, want 3", got)
	}
	s.Close()
	// The checkpoint moved: a second open checks nothing, commits nothing.
	s = openTestStore(t, dir)
	if s.Head() == head {
		t.Errorf("no disk commit for the edit")
	}
	if c, err := openCheckpoint(s.hist); err != nil || c.head.String() != s.Head() {
		t.Errorf("checkpoint %v, %v; want HEAD %s", c.head, err, s.Head())
	}
	s.fsck(t)
}

// TestCheckpointSlots: a torn write of one slot leaves the other.
func TestCheckpointSlots(t *testing.T) {
	dir := t.TempDir()
	c, err := openCheckpoint(dir)
	if err != nil || c.found {
		t.Fatalf("new checkpoint: found %v, %v", c.found, err)
	}
	var h1, h2 = blobHash([]byte("1")), blobHash([]byte("2"))
	if err := c.record(h1); err != nil {
		t.Fatal(err)
	}
	if err := c.record(h2); err != nil {
		t.Fatal(err)
	}
	c.f.Close()
	if c, err = openCheckpoint(dir); err != nil || c.head != h2 {
		t.Fatalf("reopened: %v, %v; want %v", c.head, err, h2)
	}
	// Tear the newer slot (seq 2, the first).
	if _, err := c.f.WriteAt([]byte{0xff, 0xff}, 10); err != nil {
		t.Fatal(err)
	}
	c.f.Close()
	if c, err = openCheckpoint(dir); err != nil || c.head != h1 {
		t.Fatalf("after a torn slot: %v, %v; want %v", c.head, err, h1)
	}
	c.f.Close()
}

// TestSyncLazyDirectoryGone: a directory removed before the checkpointer's
// round needs no sync, and does not stop the checkpoints.
func TestSyncLazyDirectoryGone(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.Mkdir(filepath.Join(dir, "here"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syncLazy(root, nil, []string{"here", "gone", "gone/deeper"}); err != nil {
		t.Errorf("syncLazy: %v", err)
	}
}
