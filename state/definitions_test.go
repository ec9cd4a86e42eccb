package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nexuscocreate/nexus/events"
)

type testStore struct {
	*Definitions
	dir, hist string
}

func openTestStore(t *testing.T, dir string) *testStore {
	t.Helper()
	s, err := OpenDefinitions(DefinitionsOptions{
		Dir:        filepath.Join(dir, "defs"),
		HistoryDir: filepath.Join(dir, "history.git"),
		Bus:        events.New(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &testStore{s, filepath.Join(dir, "defs"), filepath.Join(dir, "history.git")}
}

// git runs the git CLI on the store's repository.
func (ts *testStore) git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"--git-dir", ts.hist}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (ts *testStore) fsck(t *testing.T) {
	t.Helper()
	// A merge under way would retire packs that fsck listed (see
	// retireGrace): wait for it, as no write follows.
	ts.repo.bg.Wait()
	if out := ts.git(t, "fsck", "--strict", "--no-dangling"); strings.TrimSpace(out) != "" {
		t.Errorf("git fsck: %s", out)
	}
}

func mustSetDef(t *testing.T, s *testStore, path, content string) string {
	t.Helper()
	rev, err := s.Set(path, []byte(content), WriteOptions{Author: "cli"})
	if err != nil {
		t.Fatalf("Set(%q): %v", path, err)
	}
	return rev
}

func TestSetGetHistoryMatchGit(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	r1 := mustSetDef(t, s, "a/brief.md", "one\n")
	mustSetDef(t, s, "b/other.yaml", "x: 1\n")
	r2 := mustSetDef(t, s, "a/brief.md", "two\n")
	if _, err := s.Delete("a/brief.md", WriteOptions{Author: "app:planner"}); err != nil {
		t.Fatal(err)
	}
	r4 := mustSetDef(t, s, "a/brief.md", "three\n")

	f, err := s.Get("a/brief.md", "")
	if err != nil || string(f.Content) != "three\n" || f.Revision != r4 {
		t.Fatalf("Get = %q %s, %v; want three at %s", f.Content, f.Revision, err, r4)
	}
	f, err = s.Get("a/brief.md", r1[:8])
	if err != nil || string(f.Content) != "one\n" || f.Revision != r1 {
		t.Fatalf("Get at %s = %q %s, %v", r1[:8], f.Content, f.Revision, err)
	}
	// At the commit of b/other.yaml, brief.md was last changed by r1.
	if f, _ := s.Get("a/brief.md", s.mustHistory(t, "b/other.yaml")[0].Revision); f.Revision != r1 {
		t.Errorf("revision at an unrelated commit = %s, want %s", f.Revision, r1)
	}
	if disk, _ := os.ReadFile(filepath.Join(s.dir, "a/brief.md")); string(disk) != "three\n" {
		t.Errorf("working file = %q", disk)
	}

	hist := s.mustHistory(t, "a/brief.md")
	var got []string
	for _, e := range hist {
		got = append(got, e.Revision)
	}
	want := strings.Fields(s.git(t, "log", "--format=%H", "--", "a/brief.md"))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("history = %v\ngit log = %v", got, want)
	}
	changes := fmt.Sprint(hist[0].Change, hist[1].Change, hist[2].Change, hist[3].Change)
	if changes != "added deleted modified added" {
		t.Errorf("changes = %s", changes)
	}
	if hist[1].Author != "app:planner" || hist[1].Message != "delete a/brief.md\n" {
		t.Errorf("delete entry = %+v", hist[1])
	}
	if hist[2].Revision != r2 {
		t.Errorf("hist[2] = %s, want %s", hist[2].Revision, r2)
	}
	// Paging.
	page, next, err := s.History("a/brief.md", 3, "")
	if err != nil || len(page) != 3 || next == "" {
		t.Fatalf("page 1: %d entries, next %q, %v", len(page), next, err)
	}
	page2, next2, err := s.History("a/brief.md", 3, next)
	if err != nil || len(page2) != 1 || next2 != "" || page2[0].Revision != r1 {
		t.Fatalf("page 2: %+v, next %q, %v", page2, next2, err)
	}
	if got := s.git(t, "cat-file", "-p", "HEAD:a/brief.md"); got != "three\n" {
		t.Errorf("git cat-file = %q", got)
	}
	if got := s.git(t, "log", "-1", "--format=%an %s", r2); got != "cli set a/brief.md\n" {
		t.Errorf("author and subject = %q", got)
	}
	s.fsck(t)
}

func (s *testStore) mustHistory(t *testing.T, path string) []HistoryEntry {
	t.Helper()
	h, _, err := s.History(path, 1000, "")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestDiffMatchesGit(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	base := strings.Join(lines, "\n") + "\n"
	edits := []struct{ name, content string }{
		{"new file", base},
		{"middle line", strings.Replace(base, "line 15\n", "line fifteen\n", 1)},
		{"two distant hunks", strings.Replace(strings.Replace(base, "line 2\n", "", 1), "line 27\n", "line 27\nextra\n", 1)},
		{"no newline at end", strings.TrimSuffix(base, "\n")},
		{"prepend", "first\n" + base},
		{"func context", "name: x\n  indent a\n  b\n  c\n  d\n  e\n  f\n  g\n  changed\n"},
		{"empty", ""},
		{"yaml", "apps:\n  - id: a\n    grants:\n      read: [x]\n"},
	}
	revs := []string{}
	for _, e := range edits {
		revs = append(revs, mustSetDef(t, s, "f.txt", e.content))
	}
	if _, err := s.Delete("f.txt", WriteOptions{Author: "cli"}); err != nil {
		t.Fatal(err)
	}
	revs = append(revs, s.Head())
	for i := 0; i+1 < len(revs); i++ {
		for _, j := range []int{i + 1, len(revs) - 1} {
			ours, err := s.Diff("f.txt", "", revs[i], revs[j])
			if err != nil {
				t.Fatal(err)
			}
			theirs := s.git(t, "diff", "--abbrev=7", revs[i], revs[j], "--", "f.txt")
			if ours != theirs {
				t.Errorf("diff %d→%d differs from git:\n--- ours\n%s\n--- git\n%s", i, j, ours, theirs)
			}
		}
	}
	// An unchanged file between two revisions has an empty diff.
	if d, err := s.Diff("f.txt", "", revs[1], revs[1]); err != nil || d != "" {
		t.Errorf("diff of a revision with itself = %q, %v", d, err)
	}
}

func TestApplyDiff(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	r1 := mustSetDef(t, s, "p.md", "a\nb\nc\n")
	mustSetDef(t, s, "p.md", "a\nB\nc\nd\n")
	d, err := s.Diff("p.md", "", r1, "")
	if err != nil {
		t.Fatal(err)
	}
	mustSetDef(t, s, "q.md", "a\nb\nc\n")
	rev, content, err := s.ApplyDiff("q.md", d, WriteOptions{Author: "cli"})
	if err != nil || string(content) != "a\nB\nc\nd\n" {
		t.Fatalf("ApplyDiff = %q, %v", content, err)
	}
	if f, _ := s.Get("q.md", ""); f.Revision != rev {
		t.Errorf("revision %s, Get says %s", rev, f.Revision)
	}
	// A bare hunk applies to the named file.
	if _, content, err := s.ApplyDiff("q.md", "@@ -4 +4 @@\n-d\n+D\n", WriteOptions{Author: "cli"}); err != nil || string(content) != "a\nB\nc\nD\n" {
		t.Fatalf("bare hunk: %q, %v", content, err)
	}
	head := s.Head()
	for _, bad := range []struct {
		diff string
		want error
	}{
		{d, ErrPatch},                         // already applied
		{"@@ -1 +1 @@\n-zzz\n+y\n", ErrPatch}, // context does not match
		{"not a diff at all", ErrInvalid},
		{"", ErrInvalid},
	} {
		if _, _, err := s.ApplyDiff("q.md", bad.diff, WriteOptions{Author: "cli"}); !errors.Is(err, bad.want) {
			t.Errorf("ApplyDiff(%q) = %v, want %v", bad.diff, err, bad.want)
		}
	}
	if s.Head() != head {
		t.Error("a failed apply made a commit")
	}
}

// TestApplyDiffCRLF: a file with CRLF line ends (as Windows editors write
// them) keeps them through a diff and its apply: the diff carries each
// "\r" as git's does, the applied content is byte for byte the intended
// one, on disk too, and a hunk whose lines lack the "\r" does not match.
func TestApplyDiffCRLF(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	r1 := mustSetDef(t, s, "p.md", "a\r\nb\r\nc\r\n")
	mustSetDef(t, s, "p.md", "a\r\nB\r\nc\r\nd\r\n")
	d, err := s.Diff("p.md", "", r1, "")
	if err != nil {
		t.Fatal(err)
	}
	if theirs := s.git(t, "diff", "--abbrev=7", r1, s.Head(), "--", "p.md"); d != theirs {
		t.Errorf("diff differs from git:\n--- ours\n%q\n--- git\n%q", d, theirs)
	}
	if !strings.Contains(d, "-b\r\n+B\r\n") {
		t.Errorf("the diff lost the CRs: %q", d)
	}
	mustSetDef(t, s, "q.md", "a\r\nb\r\nc\r\n")
	if _, content, err := s.ApplyDiff("q.md", d, WriteOptions{Author: "cli"}); err != nil || string(content) != "a\r\nB\r\nc\r\nd\r\n" {
		t.Fatalf("ApplyDiff = %q, %v", content, err)
	}
	if _, content, err := s.ApplyDiff("q.md", "@@ -4 +4 @@\n-d\r\n+D\r\n", WriteOptions{Author: "cli"}); err != nil || string(content) != "a\r\nB\r\nc\r\nD\r\n" {
		t.Fatalf("bare CRLF hunk: %q, %v", content, err)
	}
	if _, _, err := s.ApplyDiff("q.md", "@@ -4 +4 @@\n-D\n+E\n", WriteOptions{Author: "cli"}); !errors.Is(err, ErrPatch) {
		t.Errorf("a hunk without the CRs = %v, want ErrPatch", err)
	}
	// Mixed line ends: each line keeps its own.
	mustSetDef(t, s, "m.md", "one\r\ntwo\nthree\r\n")
	if _, content, err := s.ApplyDiff("m.md", "@@ -2 +2 @@\n-two\n+TWO\n", WriteOptions{Author: "cli"}); err != nil || string(content) != "one\r\nTWO\nthree\r\n" {
		t.Fatalf("mixed line ends: %q, %v", content, err)
	}
	for p, want := range map[string]string{"q.md": "a\r\nB\r\nc\r\nD\r\n", "m.md": "one\r\nTWO\nthree\r\n"} {
		if got, err := os.ReadFile(filepath.Join(s.dir, p)); err != nil || string(got) != want {
			t.Errorf("%s on disk = %q, %v; want %q", p, got, err, want)
		}
	}
}

func TestCompareAndSwap(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	r1 := mustSetDef(t, s, "c.yaml", "v1")
	mustSetDef(t, s, "other", "x") // another path does not move c.yaml's revision
	r2, err := s.Set("c.yaml", []byte("v2"), WriteOptions{Author: "cli", ExpectedRevision: r1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set("c.yaml", []byte("v3"), WriteOptions{Author: "cli", ExpectedRevision: r1}); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale write: %v, want ErrConflict", err)
	}
	if _, err := s.Set("c.yaml", []byte("v3"), WriteOptions{Author: "cli", ExpectedRevision: ExpectAbsent}); !errors.Is(err, ErrConflict) {
		t.Fatalf("create over existing: %v, want ErrConflict", err)
	}
	if _, err := s.Set("new.yaml", []byte("n"), WriteOptions{Author: "cli", ExpectedRevision: ExpectAbsent}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete("c.yaml", WriteOptions{Author: "cli", ExpectedRevision: r1}); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale delete: %v", err)
	}
	if f, _ := s.Get("c.yaml", ""); string(f.Content) != "v2" || f.Revision != r2 {
		t.Errorf("after conflicts: %q %s", f.Content, f.Revision)
	}
	// The same content again is no commit.
	if rev := mustSetDef(t, s, "c.yaml", "v2"); rev != r2 {
		t.Errorf("rewrite of the same content moved the revision to %s", rev)
	}
}

func TestConcurrentWritersWithExpectedRevision(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	mustSetDef(t, s, "counter", "0")
	var wg sync.WaitGroup
	var mu sync.Mutex
	landed := map[string]string{}
	conflicts := 0
	for w := range 32 {
		wg.Go(func() {
			for i := range 5 {
				f, err := s.Get("counter", "")
				if err != nil {
					t.Error(err)
					return
				}
				content := fmt.Sprintf("writer %d write %d", w, i)
				rev, err := s.Set("counter", []byte(content), WriteOptions{Author: "cli", ExpectedRevision: f.Revision})
				mu.Lock()
				switch {
				case err == nil:
					landed[rev] = content
				case errors.Is(err, ErrConflict):
					conflicts++
				default:
					t.Error(err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	hist := s.mustHistory(t, "counter")
	if len(hist) != len(landed)+1 || len(landed)+conflicts != 160 {
		t.Fatalf("%d landed, %d conflicts, %d history entries", len(landed), conflicts, len(hist))
	}
	for rev, content := range landed {
		if f, err := s.Get("counter", rev); err != nil || string(f.Content) != content {
			t.Errorf("landed write %s: %q, %v; want %q", rev, f.Content, err, content)
		}
	}
	s.fsck(t)
}

func TestBadInputChangesNothing(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	mustSetDef(t, s, "ok/file", "x")
	mustSetDef(t, s, "file", "y")
	if err := os.Symlink("/etc", filepath.Join(s.dir, "ok", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../..", filepath.Join(s.dir, "up")); err != nil {
		t.Fatal(err)
	}
	head := s.Head()
	big := strings.Repeat("x", DefaultMaxFileSize+1)
	cases := []struct {
		path, content string
		want          error
	}{
		{"", "x", ErrInvalid},
		{"../escape", "x", ErrInvalid},
		{"a/../../escape", "x", ErrInvalid},
		{"/etc/passwd", "x", ErrInvalid},
		{"a//b", "x", ErrInvalid},
		{"a/./b", "x", ErrInvalid},
		{"a/", "x", ErrInvalid},
		{"nul\x00byte", "x", ErrInvalid},
		{"bad\xffutf8", "x", ErrInvalid},
		{".git/config", "x", ErrInvalid},
		{"x/.nexus-tmp-1", "x", ErrInvalid},
		{"ok/link/passwd", "x", ErrInvalid}, // through a symlink out of the root
		{"up/escape", "x", ErrInvalid},      // through a relative symlink out
		{"file/under", "x", ErrInvalid},     // under a file
		{"ok", "x", ErrInvalid},             // over a directory
		{"big", big, ErrTooLarge},
		{"binary", "\xff\xfe", ErrInvalid},
	}
	for _, c := range cases {
		if _, err := s.Set(c.path, []byte(c.content), WriteOptions{Author: "cli"}); !errors.Is(err, c.want) {
			t.Errorf("Set(%q) = %v, want %v", c.path, err, c.want)
		}
	}
	if s.Head() != head {
		t.Errorf("bad input made a commit")
	}
	if _, err := os.Stat("/etc/passwd.nexus"); err == nil {
		t.Error("a write escaped")
	}
	for _, p := range []string{"up/escape", "escape", "big", "binary"} {
		if _, err := os.Lstat(filepath.Join(s.dir, p)); err == nil {
			t.Errorf("%s exists on disk", p)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "escape")); err == nil {
		t.Error("escape exists beside the root")
	}
	if _, err := s.Get("missing", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(missing) = %v", err)
	}
	if _, err := s.Get("file", "zz"); !errors.Is(err, ErrInvalid) {
		t.Errorf("Get at a bad revision = %v", err)
	}
	if _, err := s.Get("file", strings.Repeat("0", 40)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get at an unknown revision = %v", err)
	}
	s.fsck(t)
}

func TestList(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	mustSetDef(t, s, "app/a.md", "aa")
	mustSetDef(t, s, "app/sub/b.md", "bbb")
	mustSetDef(t, s, "top.md", "t")
	list := func(dir string, rec bool) string {
		es, err := s.List(dir, rec)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, e := range es {
			if e.Dir {
				parts = append(parts, e.Path+"/")
			} else {
				parts = append(parts, fmt.Sprintf("%s:%d", e.Path, e.Size))
			}
		}
		return strings.Join(parts, " ")
	}
	if got := list("", false); got != "app/ top.md:1" {
		t.Errorf("root = %s", got)
	}
	if got := list("app", true); got != "app/a.md:2 app/sub/ app/sub/b.md:3" {
		t.Errorf("app recursive = %s", got)
	}
	if _, err := s.Delete("app/sub/b.md", WriteOptions{Author: "cli"}); err != nil {
		t.Fatal(err)
	}
	if got := list("app", false); got != "app/a.md:2" {
		t.Errorf("after delete = %s", got)
	}
	if _, err := os.Stat(filepath.Join(s.dir, "app/sub")); !os.IsNotExist(err) {
		t.Errorf("emptied directory still on disk: %v", err)
	}
	if _, err := s.List("top.md", false); !errors.Is(err, ErrInvalid) {
		t.Errorf("List(file) = %v", err)
	}
	s.fsck(t)
}

func TestReopenKeepsAndRebuildsIndex(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	for i := range 5 {
		mustSetDef(t, s, fmt.Sprintf("d/f%d", i%2), fmt.Sprint(i))
	}
	want := s.mustHistory(t, "d/f0")
	s.Close()

	check := func(name string) {
		t.Helper()
		s := openTestStore(t, dir)
		got := s.mustHistory(t, "d/f0")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: history %v, want %v", name, got, want)
		}
		s.Close()
	}
	check("reopen")
	idx := filepath.Join(dir, "history.git", "nexus-history.idx")
	os.Remove(idx)
	check("index deleted")
	data, _ := os.ReadFile(idx)
	os.WriteFile(idx, data[:len(data)-20], 0o644) // torn tail
	check("index torn")
	// Torn where a field ends: the last record without its changes.
	data, _ = os.ReadFile(idx)
	os.WriteFile(idx, data[:bytes.LastIndexByte(data, '\t')], 0o644)
	check("index torn at a field's end")
	os.WriteFile(idx, []byte("garbage"), 0o644)
	check("index garbage")
}

func TestRecoverDamagedRef(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	mustSetDef(t, s, "a", "1")
	r2 := mustSetDef(t, s, "a", "2")
	s.Close()
	ref := filepath.Join(dir, "history.git", "refs", "heads", "main")
	for _, damage := range []string{"", "garbage\n", strings.Repeat("1", 40) + "\n"} {
		if err := os.WriteFile(ref, []byte(damage), 0o644); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(ref+".lock", []byte("stale"), 0o644)
		s := openTestStore(t, dir)
		if s.Head() != r2 {
			t.Errorf("ref %q: recovered to %s, want %s", damage, s.Head(), r2)
		}
		s.fsck(t)
		s.Close()
	}
	os.Remove(ref)
	s = openTestStore(t, dir)
	if s.Head() != r2 {
		t.Errorf("missing ref: recovered to %s", s.Head())
	}
}

func TestDiskChangesWhileClosedAreCommitted(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	mustSetDef(t, s, "kept", "k")
	mustSetDef(t, s, "edited", "old")
	mustSetDef(t, s, "removed", "r")
	s.Close()
	os.WriteFile(filepath.Join(s.dir, "edited"), []byte("new"), 0o644)
	os.Remove(filepath.Join(s.dir, "removed"))
	os.MkdirAll(filepath.Join(s.dir, "n"), 0o755)
	os.WriteFile(filepath.Join(s.dir, "n", "added"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(s.dir, "n", tmpPrefix+"junk"), []byte("j"), 0o644)

	s = openTestStore(t, dir)
	for p, want := range map[string]string{"edited": "modified", "removed": "deleted", "n/added": "added"} {
		h := s.mustHistory(t, p)
		if h[0].Author != AuthorDisk || h[0].Change.String() != want {
			t.Errorf("%s: newest entry %+v, want a disk commit %s", p, h[0], want)
		}
	}
	if h := s.mustHistory(t, "kept"); len(h) != 1 {
		t.Errorf("unchanged file got %d entries", len(h))
	}
	if _, err := os.Stat(filepath.Join(s.dir, "n", tmpPrefix+"junk")); !os.IsNotExist(err) {
		t.Error("temporary file left behind")
	}
	s.fsck(t)
}

func TestWorksAfterGitGC(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	var revs []string
	for i := range 20 {
		revs = append(revs, mustSetDef(t, s, "g/file.md", fmt.Sprintf("line a\nline %d\nline c\n", i)))
		mustSetDef(t, s, fmt.Sprintf("g/other%d.md", i%4), fmt.Sprint(i))
	}
	s.Close()
	s.git(t, "gc", "-q", "--aggressive", "--prune=now")
	if _, err := os.Stat(filepath.Join(s.hist, "refs/heads/main")); !os.IsNotExist(err) {
		t.Fatalf("git gc kept the loose ref (%v); the test wants it packed", err)
	}
	s = openTestStore(t, dir)
	if s.Head() != revs[19] && s.Head() == "" {
		t.Fatalf("head after gc = %q", s.Head())
	}
	if got := fmt.Sprint(len(s.mustHistory(t, "g/file.md"))); got != "20" {
		t.Errorf("history after gc has %s entries", got)
	}
	if f, err := s.Get("g/file.md", revs[3]); err != nil || string(f.Content) != "line a\nline 3\nline c\n" {
		t.Errorf("packed read = %q, %v", f.Content, err)
	}
	ours, err := s.Diff("g/file.md", "", revs[0], revs[19])
	if err != nil {
		t.Fatal(err)
	}
	if theirs := s.git(t, "diff", revs[0], revs[19], "--", "g/file.md"); ours != theirs {
		t.Errorf("diff of packed objects:\n%s\ngit:\n%s", ours, theirs)
	}
	r := mustSetDef(t, s, "g/file.md", "after gc\n")
	if got := strings.TrimSpace(s.git(t, "rev-parse", "main")); got != r {
		t.Errorf("git sees main at %s, want %s", got, r)
	}
	s.fsck(t)
}
