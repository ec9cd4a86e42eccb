package state

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestPacksToMerge(t *testing.T) {
	for _, c := range []struct {
		counts []int
		want   int
	}{
		{nil, 0},
		{[]int{5}, 0},
		{[]int{5, 10, 20, 40}, 0},        // already twofold
		{[]int{5, 5}, 2},                 // two alike: both
		{[]int{5, 5, 5, 5, 1000}, 4},     // the small ones, not the big one
		{[]int{5, 5, 5, 5, 30, 1000}, 5}, // 20 is more than half of 30: it goes too
		{[]int{5, 5, 5, 5, 30}, 5},       // then all
		{[]int{5, 5, 80, 100}, 4},        // 80 and 100 are not twofold apart
		{[]int{5, 6, 7, 100, 1000}, 3},   // 18 is less than half of 100
		{[]int{5, 6, 7, 8, 9, 10, 11, 60}, 8},
	} {
		if got := packsToMerge(c.counts); got != c.want {
			t.Errorf("packsToMerge(%v) = %d, want %d", c.counts, got, c.want)
		}
	}
}

// packFiles returns the packs (their names without the extension) in
// the history, and fails on an index without its pack or the reverse.
func (ts *testStore) packFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(ts.hist, "objects", "pack"))
	if err != nil {
		t.Fatal(err)
	}
	exts := map[string][]string{}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if ext == ".pack" || ext == ".idx" {
			base := strings.TrimSuffix(e.Name(), ext)
			exts[base] = append(exts[base], ext)
		} else if ext != ".keep" {
			t.Errorf("%s left in objects/pack", e.Name())
		}
	}
	var packs []string
	for base, e := range exts {
		if len(e) != 2 {
			t.Errorf("%s has %v", base, e)
		}
		packs = append(packs, base)
	}
	return packs
}

// TestPacksMerge writes one commit at a time, each its own pack, well past
// maxPacks: the packs are merged in the background, every revision stays
// readable (through the store and through git, before and after a
// restart), and git finds every pack and the history sound.
func TestPacksMerge(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	const writes = 5 * maxPacks
	revs := make([]string, writes)
	for i := range writes {
		revs[i] = mustSetDef(t, s, fmt.Sprintf("d%d/f.md", i%7), fmt.Sprintf("version %d\n", i))
		// A read of an older revision, while packs may be merging.
		if f, err := s.Get(fmt.Sprintf("d%d/f.md", i/2%7), revs[i/2]); err != nil || string(f.Content) != fmt.Sprintf("version %d\n", i/2) {
			t.Fatalf("Get at %s while writing = %q, %v", revs[i/2], f.Content, err)
		}
	}
	check := func(when string) {
		t.Helper()
		for i, rev := range revs {
			f, err := s.Get(fmt.Sprintf("d%d/f.md", i%7), rev)
			if err != nil || string(f.Content) != fmt.Sprintf("version %d\n", i) {
				t.Fatalf("%s: Get at %s = %q, %v", when, rev, f.Content, err)
			}
		}
		if got := len(s.mustHistory(t, "d3/f.md")); got != (writes+3)/7 {
			t.Errorf("%s: history of d3/f.md has %d entries, want %d", when, got, (writes+3)/7)
		}
	}
	check("open")
	// git fsck once the merges are done (fsck waits for them), with the
	// files of merged packs still there (retireGrace).
	s.fsck(t)
	// The abbreviated names of a diff, as git's, count the objects of the
	// merged packs still on disk.
	ours, err := s.Diff("d0/f.md", "", revs[0], revs[77])
	if err != nil {
		t.Fatal(err)
	}
	if theirs := s.git(t, "diff", revs[0], revs[77], "--", "d0/f.md"); ours != theirs {
		t.Errorf("diff:\n%s\ngit:\n%s", ours, theirs)
	}
	s.Close() // waits for a merge under way, removes the merged packs
	packs := s.packFiles(t)
	if len(packs) > maxPacks+1 {
		t.Errorf("%d writes left %d packs, want them merged to at most %d", writes, len(packs), maxPacks+1)
	}
	for _, p := range packs {
		s.git(t, "verify-pack", filepath.Join(s.hist, "objects", "pack", p+".idx"))
	}
	// A group's pack stores its objects; a merged one compresses them.
	r, err := openRepo(s.hist, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.packs {
		entries, err := r.packEntries(p)
		if err != nil {
			t.Fatal(err)
		}
		stored := 0
		for _, e := range entries {
			buf := make([]byte, e.to-e.from)
			if _, err := p.file.ReadAt(buf, e.from); err != nil {
				t.Fatal(err)
			}
			// Trees, of binary hashes, may stay stored: deflate finds
			// nothing to gain.
			if uncompressed(buf) && plumbing.ObjectType(buf[0]>>4&7) != plumbing.TreeObject {
				stored++
			}
		}
		if merged := p.count > 7; merged && stored > 0 || !merged && stored == 0 {
			t.Errorf("pack of %d objects has %d stored uncompressed", p.count, stored)
		}
	}
	r.close()
	if got := strings.TrimSpace(s.git(t, "show", revs[7]+":d0/f.md")); got != "version 7" {
		t.Errorf("git show = %q", got)
	}
	s.fsck(t)
	s = openTestStore(t, dir)
	check("reopened")
}

// TestPackDebris: an index left without its pack (a crash between the two
// renames of a group, or a merge's removals) is removed at the start, and
// loose objects (of git, or of an older Nexus) are read.
func TestPackDebris(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	mustSetDef(t, s, "a.md", "a\n")
	s.Close()
	packs := s.packFiles(t)
	if len(packs) != 1 {
		t.Fatalf("one write made %d packs", len(packs))
	}
	idx := filepath.Join(s.hist, "objects", "pack", packs[0]+".idx")
	orphan := filepath.Join(s.hist, "objects", "pack", "pack-"+strings.Repeat("ab", 20)+".idx")
	data, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, data, 0o644); err != nil {
		t.Fatal(err)
	}
	loose := strings.TrimSpace(s.git(t, "hash-object", "-w", "--stdin", "--path", "x"))
	s = openTestStore(t, dir)
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("index without its pack still there (%v)", err)
	}
	if f, err := s.Get("a.md", ""); err != nil || string(f.Content) != "a\n" {
		t.Errorf("Get = %q, %v", f.Content, err)
	}
	typ, content, err := s.repo.readObject(plumbing.NewHash(loose))
	if err != nil || typ != plumbing.BlobObject || len(content) != 0 {
		t.Errorf("loose object: %v %q %v", typ, content, err)
	}
	if !s.repo.hasObject(plumbing.NewHash(loose)) {
		t.Error("hasObject misses a loose object")
	}
	s.fsck(t)
}

// TestPacksMergeDeltas: a pack that git gc wrote, with deltas, is merged
// with the store's own packs; its objects are stored whole in the merged
// pack and every revision reads as before.
func TestPacksMergeDeltas(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	var revs []string
	var want []string
	body := strings.Repeat("a line that stays the same in every version\n", 40)
	for i := range 20 {
		c := fmt.Sprintf("%sversion %d\n", body, i)
		revs = append(revs, mustSetDef(t, s, "big.md", c))
		want = append(want, c)
	}
	s.Close()
	s.git(t, "gc", "-q", "--aggressive", "--prune=now")
	gcPacks, _ := filepath.Glob(filepath.Join(s.hist, "objects", "pack", "*.pack"))
	for i, p := range gcPacks {
		gcPacks[i] = strings.TrimSuffix(filepath.Base(p), ".pack")
	}
	if len(gcPacks) != 1 {
		t.Fatalf("git gc left %d packs", len(gcPacks))
	}
	if out := s.git(t, "verify-pack", "-v", filepath.Join(s.hist, "objects", "pack", gcPacks[0]+".idx")); !strings.Contains(out, "chain length") {
		t.Fatalf("git gc wrote no deltas:\n%s", out)
	}
	s = openTestStore(t, dir)
	for i := range 2 * maxPacks {
		c := fmt.Sprintf("%sversion %d\n", body, 100+i)
		revs = append(revs, mustSetDef(t, s, "big.md", c))
		want = append(want, c)
	}
	s.repo.bg.Wait() // the merge the writes started: Close would stop it
	s.Close()
	packs := s.packFiles(t)
	for _, p := range packs {
		if p == gcPacks[0] {
			t.Errorf("git gc's pack was not merged: %v", packs)
		}
		s.git(t, "verify-pack", filepath.Join(s.hist, "objects", "pack", p+".idx"))
	}
	s.fsck(t)
	s = openTestStore(t, dir)
	for i, rev := range revs {
		if f, err := s.Get("big.md", rev); err != nil || string(f.Content) != want[i] {
			t.Fatalf("Get at %s = %q, %v", rev, f.Content, err)
		}
	}
}

// TestPacksKept: a pack that git keeps (a .keep file) is never merged.
func TestPacksKept(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	mustSetDef(t, s, "a.md", "a\n")
	s.Close()
	kept := s.packFiles(t)[0]
	if err := os.WriteFile(filepath.Join(s.hist, "objects", "pack", kept+".keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	for i := range 3 * maxPacks {
		mustSetDef(t, s, "b.md", fmt.Sprint(i))
	}
	s.repo.bg.Wait() // the merge the writes started: Close would stop it
	s.Close()
	packs := s.packFiles(t)
	if !slices.Contains(packs, kept) || len(packs) > maxPacks+2 {
		t.Errorf("packs %v: want %s kept and the others merged", packs, kept)
	}
	s.fsck(t)
}
