package state

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nexuscocreate/nexus/events"
)

// writeDisk writes a file under the definitions root, as an editor would.
func (ts *testStore) writeDisk(t *testing.T, path, content string) {
	t.Helper()
	full := filepath.Join(ts.dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (ts *testStore) sync(t *testing.T, paths ...string) {
	t.Helper()
	if err := ts.SyncFromDisk(paths); err != nil {
		t.Fatalf("SyncFromDisk(%q): %v", paths, err)
	}
}

// log returns "author: subject" of the commits that changed path, newest
// first, as the git CLI sees them.
func (ts *testStore) log(t *testing.T, path string) []string {
	t.Helper()
	out := strings.TrimSpace(ts.git(t, "log", "--format=%an: %s", "main", "--", path))
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// diskCommits counts, per path, the commits authored disk.
func (ts *testStore) diskCommits(t *testing.T) map[string]int {
	t.Helper()
	n := map[string]int{}
	for l := range strings.SplitSeq(ts.git(t, "log", "--author=^disk <", "--format=", "--name-only", "main"), "\n") {
		if l != "" {
			n[l]++
		}
	}
	return n
}

func TestSyncFromDiskRecordsEachEditOnce(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	mustSetDef(t, s, "keep.md", "k\n")

	steps := []struct {
		name string
		do   func()
		want []string // the log of a/note.md after the step
	}{
		{"create", func() { s.writeDisk(t, "a/note.md", "one\n") },
			[]string{"disk: disk: created a/note.md"}},
		{"edit", func() { s.writeDisk(t, "a/note.md", "two\n") },
			[]string{"disk: disk: edited a/note.md", "disk: disk: created a/note.md"}},
		{"same content", func() { s.writeDisk(t, "a/note.md", "two\n") },
			[]string{"disk: disk: edited a/note.md", "disk: disk: created a/note.md"}},
		{"delete", func() { os.Remove(filepath.Join(s.dir, "a/note.md")) },
			[]string{"disk: disk: deleted a/note.md", "disk: disk: edited a/note.md", "disk: disk: created a/note.md"}},
		{"deleted again", func() {},
			[]string{"disk: disk: deleted a/note.md", "disk: disk: edited a/note.md", "disk: disk: created a/note.md"}},
	}
	for _, step := range steps {
		step.do()
		s.sync(t, "a/note.md")
		if got := s.log(t, "a/note.md"); !slices.Equal(got, step.want) {
			t.Errorf("after %s: git log = %q, want %q", step.name, got, step.want)
		}
	}
	if got := s.log(t, "keep.md"); len(got) != 1 {
		t.Errorf("keep.md, not touched: git log = %q", got)
	}
	if _, err := s.Get("a/note.md", ""); err == nil {
		t.Error("a/note.md still at HEAD after its deletion was recorded")
	}
	s.fsck(t)
}

func TestSyncFromDiskPublishes(t *testing.T) {
	dir := t.TempDir()
	bus := events.New()
	sub := bus.Subscribe(nil, 16)
	defer sub.Close()
	s, err := OpenDefinitions(DefinitionsOptions{Dir: filepath.Join(dir, "defs"), HistoryDir: filepath.Join(dir, "h.git"), Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	os.WriteFile(filepath.Join(dir, "defs", "x.yaml"), []byte("x: 1\n"), 0o644)
	if err := s.SyncFromDisk([]string{"x.yaml"}); err != nil {
		t.Fatal(err)
	}
	ev := <-sub.C
	c, ok := ev.(DefinitionChange)
	if !ok || c.Path != "x.yaml" || c.Author != AuthorDisk || c.Change != Added || c.Revision != s.Head() {
		t.Errorf("event %#v, want a disk addition of x.yaml at %s", ev, s.Head())
	}
}

func TestSyncFromDiskDirectories(t *testing.T) {
	s := openTestStore(t, t.TempDir())

	// A tree created at once, reported as its top directory.
	for _, p := range []string{"app/a.md", "app/sub/b.md", "app/sub/deep/c.md"} {
		s.writeDisk(t, p, p+"\n")
	}
	s.sync(t, "app")
	want := map[string]int{"app/a.md": 1, "app/sub/b.md": 1, "app/sub/deep/c.md": 1}
	if got := s.diskCommits(t); !mapsEqual(got, want) {
		t.Fatalf("after creating app/: disk commits %v, want %v", got, want)
	}

	// Moved: the old directory is gone, the new one has the files.
	if err := os.Rename(filepath.Join(s.dir, "app", "sub"), filepath.Join(s.dir, "moved")); err != nil {
		t.Fatal(err)
	}
	s.sync(t, "app/sub", "moved", "moved/b.md") // a file reported with its directory counts once
	want = map[string]int{"app/a.md": 1, "app/sub/b.md": 2, "app/sub/deep/c.md": 2, "moved/b.md": 1, "moved/deep/c.md": 1}
	if got := s.diskCommits(t); !mapsEqual(got, want) {
		t.Fatalf("after the move: disk commits %v, want %v", got, want)
	}
	if got := s.log(t, "app/sub/b.md")[0]; got != "disk: disk: deleted app/sub/b.md" {
		t.Errorf("newest commit of the moved file: %q", got)
	}

	// A directory that took the place of a file, and the other way round.
	os.Remove(filepath.Join(s.dir, "app", "a.md"))
	s.writeDisk(t, "app/a.md/inside.md", "i\n")
	os.RemoveAll(filepath.Join(s.dir, "moved"))
	s.writeDisk(t, "moved", "now a file\n")
	s.sync(t, "app/a.md", "moved")
	for p, content := range map[string]string{"app/a.md/inside.md": "i\n", "moved": "now a file\n"} {
		if f, err := s.Get(p, ""); err != nil || string(f.Content) != content {
			t.Errorf("%s = %q, %v; want %q", p, f.Content, err, content)
		}
	}
	for _, p := range []string{"app/a.md", "moved/b.md", "moved/deep/c.md"} {
		if _, err := s.Get(p, ""); err == nil {
			t.Errorf("%s still at HEAD", p)
		}
	}
	s.fsck(t)
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestSyncFromDiskAfterSetIsNoCommit(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	rev := mustSetDef(t, s, "app/brief.md", "from the editor\n")
	s.sync(t, "app/brief.md", "app")
	if _, err := s.Delete("app/brief.md", WriteOptions{Author: AuthorCLI}); err != nil {
		t.Fatal(err)
	}
	s.sync(t, "app/brief.md", "app")
	if got, want := s.log(t, "app/brief.md"), []string{"cli: delete app/brief.md", "cli: set app/brief.md"}; !slices.Equal(got, want) {
		t.Errorf("git log = %q, want %q (set %s)", got, want, rev)
	}
}

func TestSyncFromDiskSkipsWhatItCannotRecord(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenDefinitions(DefinitionsOptions{Dir: filepath.Join(dir, "defs"), HistoryDir: filepath.Join(dir, "h.git"), MaxFileSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := &testStore{s, filepath.Join(dir, "defs"), filepath.Join(dir, "h.git")}
	mustSetDef(t, ts, "grows", "small")
	mustSetDef(t, ts, "becomes-link", "file")
	mustSetDef(t, ts, "through/link", "t")
	head := s.Head()

	ts.writeDisk(t, "grows", strings.Repeat("x", 65))
	ts.writeDisk(t, "big", strings.Repeat("x", 65))
	ts.writeDisk(t, "binary", "\xff\xfe")
	ts.writeDisk(t, tmpPrefix+"123", "in progress")
	ts.writeDisk(t, "ok/"+tmpPrefix+"456", "in progress")
	os.Symlink("/etc/hostname", filepath.Join(ts.dir, "link"))
	os.Symlink("ok", filepath.Join(ts.dir, "dirlink"))
	err = s.SyncFromDisk([]string{"grows", "big", "binary", tmpPrefix + "123", "ok", "../outside", "link", "dirlink", "dirlink/" + tmpPrefix + "456", ""})
	if err != nil {
		t.Fatal(err)
	}
	if s.Head() != head {
		t.Errorf("commits made: %s", ts.git(t, "log", "--format=%an %s", head+"..main"))
	}
	if f, err := s.Get("grows", ""); err != nil || string(f.Content) != "small" {
		t.Errorf("a file over the limit on disk: HEAD has %q, %v; want it kept", f.Content, err)
	}

	// A file replaced by a symlink, and a directory by a symlink to one:
	// the files are gone, as a scan at open finds them.
	os.Remove(filepath.Join(ts.dir, "becomes-link"))
	os.Symlink("grows", filepath.Join(ts.dir, "becomes-link"))
	os.RemoveAll(filepath.Join(ts.dir, "through"))
	ts.writeDisk(t, "elsewhere/link", "t")
	os.Symlink("elsewhere", filepath.Join(ts.dir, "through"))
	ts.sync(t, "becomes-link", "through/link")
	for _, p := range []string{"becomes-link", "through/link"} {
		if got := ts.log(t, p); len(got) != 2 || got[0] != "disk: disk: deleted "+p {
			t.Errorf("%s: git log %q, want its deletion", p, got)
		}
	}
	ts.fsck(t)
}

func TestRescanRecordsEachChangeOnce(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	for i := range 20 {
		mustSetDef(t, s, fmt.Sprintf("old/%02d.md", i), "old\n")
	}
	want := map[string]int{}
	for i := range 200 {
		p := fmt.Sprintf("new/%d/%03d.md", i%7, i)
		s.writeDisk(t, p, fmt.Sprintf("file %d\n", i))
		want[p] = 1
	}
	for i := range 20 {
		p := fmt.Sprintf("old/%02d.md", i)
		switch i % 3 {
		case 0:
			os.Remove(filepath.Join(s.dir, p))
			want[p] = 1
		case 1:
			s.writeDisk(t, p, "edited\n")
			want[p] = 1
		}
	}
	if err := s.Rescan(); err != nil {
		t.Fatal(err)
	}
	if err := s.Rescan(); err != nil {
		t.Fatal(err)
	}
	if got := s.diskCommits(t); !mapsEqual(got, want) {
		t.Errorf("disk commits per path: %d paths, want %d\ngot  %v\nwant %v", len(got), len(want), got, want)
	}
	if got := s.log(t, "old/00.md")[0]; got != "disk: disk: deleted old/00.md (found by a rescan)" {
		t.Errorf("rescan commit: %q", got)
	}
	entries, err := s.List("", true)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, e := range entries {
		if !e.Dir {
			files++
		}
	}
	if files != 200+20-7 {
		t.Errorf("%d files at HEAD, want %d", files, 200+20-7)
	}
	s.fsck(t)
}

// Writes through the store, edits on disk and syncs run together: every
// edit on disk is recorded, the store's own writes never as disk commits,
// and HEAD ends equal to the disk.
func TestConcurrentSetAndSync(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 15 {
				p := fmt.Sprintf("store/%d.md", w)
				if _, err := s.Set(p, fmt.Appendf(nil, "write %d\n", i), WriteOptions{Author: AuthorEditor}); err != nil {
					t.Error(err)
				}
				if i%5 == 4 {
					if _, err := s.Delete(p, WriteOptions{Author: AuthorEditor}); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 30 {
			p := fmt.Sprintf("disk/%d.md", i%3)
			s.writeDisk(t, p, fmt.Sprintf("edit %d\n", i))
			if err := s.SyncFromDisk([]string{p}); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Go(func() {
		for range 30 {
			if err := s.SyncFromDisk([]string{"store", "disk"}); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Go(func() {
		for range 5 {
			if err := s.Rescan(); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()

	for p := range s.diskCommits(t) {
		if strings.HasPrefix(p, "store/") {
			t.Errorf("a write through the store was recorded again as a disk edit: %s\n%s", p, strings.Join(s.log(t, p), "\n"))
		}
	}
	for i := range 3 {
		p := fmt.Sprintf("disk/%d.md", i)
		f, err := s.Get(p, "")
		if err != nil || string(f.Content) != fmt.Sprintf("edit %d\n", 27+i) {
			t.Errorf("%s at HEAD = %q, %v", p, f.Content, err)
		}
	}
	head := s.Head()
	if err := s.Rescan(); err != nil {
		t.Fatal(err)
	}
	if s.Head() != head {
		t.Errorf("HEAD differs from the disk after the syncs: %s", s.git(t, "log", "--format=%an %s", head+"..main"))
	}
	s.fsck(t)
}

func TestIsTempName(t *testing.T) {
	for rel, want := range map[string]bool{
		tmpPrefix + "0a1b":          true,
		"app/" + tmpPrefix + "0a1b": true,
		tmpPrefix + "dir/file.md":   true,
		"app/brief.md":              false,
		"app/nexus-tmp-x":           false,
	} {
		if got := IsTempName(rel); got != want {
			t.Errorf("IsTempName(%q) = %v, want %v", rel, got, want)
		}
	}
}

func TestBlobHashIsGits(t *testing.T) {
	for _, s := range []string{"", "x", "hello\n", strings.Repeat("long ", 10000)} {
		if want, got := plumbing.ComputeHash(plumbing.BlobObject, []byte(s)), blobHash([]byte(s)); want != got {
			t.Errorf("blobHash of %d bytes = %s, want %s", len(s), got, want)
		}
		for _, typ := range []plumbing.ObjectType{plumbing.TreeObject, plumbing.CommitObject} {
			if want, got := plumbing.ComputeHash(typ, []byte(s)), objectHash(typ, []byte(s)); want != got {
				t.Errorf("objectHash of a %s of %d bytes = %s, want %s", typ, len(s), got, want)
			}
		}
	}
}
