package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestChangesAppendLogRewriteGC(t *testing.T) {
	ts := openTestStore(t, t.TempDir())
	if _, err := ts.Set("a.md", []byte("definition"), WriteOptions{Author: "cli"}); err != nil {
		t.Fatal(err)
	}
	c := ts.Changes()
	const ref = "refs/nexus/test"
	rec := func(i int, files ...ChangeFile) ChangeRecord {
		return ChangeRecord{Manifest: fmt.Appendf(nil, `{"n":%d}`, i), Files: files, Author: "agent:s", Message: fmt.Sprint("r", i), Time: time.Now()}
	}
	if err := c.Put([][]byte{[]byte("stored before")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ref, rec(0, ChangeFile{Name: "a0", Content: []byte("zero")}),
		rec(1, ChangeFile{Name: "b0", ID: BlobID([]byte("stored before"))})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ref, rec(2, ChangeFile{Name: "a0", Content: []byte("two")})); err != nil {
		t.Fatal(err)
	}
	log, err := c.Log(ref)
	if err != nil || len(log) != 3 || string(log[0].Manifest) != `{"n":2}` || string(log[2].Manifest) != `{"n":0}` {
		t.Fatalf("log: %+v %v", log, err)
	}
	if id := log[1].Files["b0"]; id != BlobID([]byte("stored before")) {
		t.Errorf("record 1 keeps %q", id)
	}
	// Bad input names what was wrong and writes nothing.
	for _, bad := range []ChangeRecord{
		rec(9, ChangeFile{Name: ManifestName, Content: []byte("x")}),
		rec(9, ChangeFile{Name: "x/y", Content: []byte("x")}),
		rec(9, ChangeFile{Name: "m", ID: BlobID([]byte("never stored"))}),
	} {
		if _, err := c.Append(ref, bad); err == nil {
			t.Errorf("append of %+v succeeded", bad.Files)
		}
	}
	if _, err := c.Append("refs/heads/main", rec(9)); !errors.Is(err, ErrInvalid) {
		t.Errorf("append to the branch: %v", err)
	}

	n, err := c.Rewrite(ref, func(e ChangeEntry) bool { return string(e.Manifest) != `{"n":1}` })
	if err != nil || n != 1 {
		t.Fatalf("rewrite: %d %v", n, err)
	}
	if log, _ = c.Log(ref); len(log) != 2 || string(log[1].Manifest) != `{"n":0}` {
		t.Fatalf("log after rewrite: %+v", log)
	}
	if _, _, err := c.GC(nil); err != nil {
		t.Fatal(err)
	}
	if c.Has(BlobID([]byte("stored before"))) {
		t.Error("gc kept a content only a dropped record had")
	}
	if got, err := c.Read(log[0].Files["a0"]); err != nil || string(got) != "two" {
		t.Errorf("a kept content after gc: %q %v", got, err)
	}
	if f, err := ts.Get("a.md", ""); err != nil || string(f.Content) != "definition" {
		t.Errorf("the definition after gc: %q %v", f.Content, err)
	}
	if out := ts.git(t, "fsck", "--strict", "--no-dangling"); strings.TrimSpace(out) != "" {
		t.Errorf("git fsck: %s", out)
	}
	if out := ts.git(t, "log", "--format=%s", ref); out != "r2\nr0\n" {
		t.Errorf("git log %s: %q", ref, out)
	}
	// Every record dropped: the ref goes.
	if _, err := c.Rewrite(ref, func(ChangeEntry) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if log, err := c.Log(ref); err != nil || len(log) != 0 {
		t.Errorf("log of an emptied ref: %+v %v", log, err)
	}
}

// TestChangesLockLeftByACrash: the lock file of a changes ref that a crash
// left (the ref is replaced by rename, so it is only debris) is removed on
// open, as the branch's is; before, every later record of that ref failed.
func TestChangesLockLeftByACrash(t *testing.T) {
	dir := t.TempDir()
	ts := openTestStore(t, dir)
	const ref = "refs/nexus/checkpoints"
	rec := ChangeRecord{Manifest: []byte(`{}`), Author: "agent:s", Message: "r", Time: time.Now()}
	if _, err := ts.Changes().Append(ref, rec); err != nil {
		t.Fatal(err)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts.hist, "refs", "nexus", "checkpoints.lock"), []byte("0123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts = openTestStore(t, dir)
	if _, err := ts.Changes().Append(ref, rec); err != nil {
		t.Fatalf("a record after a crash left the ref's lock: %v", err)
	}
}
