package checkpoints

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
)

// fsck runs git fsck on the history repository.
func (e *env) fsck() {
	e.t.Helper()
	out, err := exec.Command("git", "--git-dir", filepath.Join(e.ws, ".nexus", "history.git"), "fsck", "--strict", "--no-dangling").CombinedOutput()
	if err != nil {
		e.t.Fatalf("git fsck: %v\n%s", err, out)
	}
}

func (e *env) write1(id, session, p, content string) {
	e.call(tools.Call{ID: id, ToolName: "write_file", Session: session, Turn: "t"}, tools.Touch{Paths: []string{p}}, agent,
		func() { e.write(p, content) })
}

func TestGCKeepsHistoryAndCheckpoints(t *testing.T) {
	e := newEnv(t, start)
	var revs []string
	for _, v := range []string{"v1", "v2", "v3"} {
		rev, err := e.defs.Set("notes.md", []byte(v), state.WriteOptions{Author: "cli"})
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	e.turn("s1", "t1")
	if _, err := e.s.Undo(context.Background(), Selector{}, person()); err != nil {
		t.Fatal(err)
	}
	e.turn("s2", "t1")
	// Garbage: a content stored and referred to by nothing.
	if err := e.defs.Changes().Put([][]byte{[]byte("nothing refers to this")}); err != nil {
		t.Fatal(err)
	}
	garbage := state.BlobID([]byte("nothing refers to this"))
	e.fsck()

	res, err := e.s.GC(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Pruned != 0 || res.BytesAfter <= 0 {
		t.Errorf("gc: %+v", res)
	}
	if e.defs.Changes().Has(garbage) {
		t.Error("gc kept a content nothing refers to")
	}
	e.fsck()
	for i, rev := range revs {
		f, err := e.defs.Get("notes.md", rev)
		if err != nil || string(f.Content) != []string{"v1", "v2", "v3"}[i] {
			t.Errorf("notes.md at %s after gc: %q, %v", rev, f.Content, err)
		}
	}
	for _, cp := range e.list(access.Person("cli"), Filter{}) {
		if _, err := e.s.Diff(access.Person("cli"), cp.ID); err != nil {
			t.Errorf("diff of %s after gc: %v", cp.ID, err)
		}
	}
	// The baseline's contents were kept: a command's deletion of a file
	// no checkpoint named before is still undone.
	e.call(tools.Call{ID: "rm", ToolName: "execute_command", Session: "s3", Turn: "t1"}, tools.Touch{All: true}, agent,
		func() { e.remove("src/edit.go") })
	if _, err := e.s.Undo(context.Background(), Selector{Call: "rm"}, person()); err != nil {
		t.Fatal(err)
	}
	e.want(map[string]string{"src/edit.go": "package src // edited in t1"})

	e.reopen()
	if n := len(e.list(access.Person("cli"), Filter{})); n != 9 {
		t.Errorf("%d checkpoints after gc and reopen, want 9", n)
	}
	e.fsck()
}

func TestPruneAtCap(t *testing.T) {
	e := newEnv(t, nil)
	e.write1("a", "s1", "a.txt", strings.Repeat("a", 1000))
	e.write1("b", "s2", "b.txt", strings.Repeat("b", 1000))
	e.write1("c", "s3", "c.txt", strings.Repeat("c", 1000))
	e.s.rec.flush()
	size, err := e.defs.Changes().Size()
	if err != nil {
		t.Fatal(err)
	}
	e.s.opts.MaxStoreBytes = size - 1
	// s1 was active last: s2 is the oldest session now.
	e.write1("a2", "s1", "a.txt", "again")
	e.s.rec.flush() // the prune starts before
	e.s.bg.Wait()
	sessions := map[string]int{}
	for _, cp := range e.list(access.Person("cli"), Filter{}) {
		sessions[cp.Session]++
	}
	if sessions["s2"] != 0 || sessions["s1"] != 2 {
		t.Errorf("after the prune: %v", sessions)
	}

	// gc prunes down to the cap, never the newest session.
	e.s.opts.MaxStoreBytes = 1
	res, err := e.s.GC(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cps := e.list(access.Person("cli"), Filter{})
	if res.Pruned != 1 || len(cps) != 2 || cps[0].Session != "s1" || res.BytesAfter >= res.BytesBefore {
		t.Errorf("gc: %+v, left %+v", res, cps)
	}
	u, err := e.s.Usage()
	if err != nil || u.Checkpoints != 2 || u.Sessions != 1 {
		t.Errorf("usage: %+v %v", u, err)
	}
	e.fsck()
	if _, err := e.s.Undo(context.Background(), Selector{Session: "s1"}, person()); err != nil {
		t.Fatal(err)
	}
	e.want(map[string]string{"a.txt": "<absent>"})
}

// TestGCWithWriters runs gc while definitions and checkpoints are written:
// nothing written is lost, and git fsck stays clean.
func TestGCWithWriters(t *testing.T) {
	e := newEnv(t, start)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var revs []string
	wg.Go(func() {
		for i := 0; i < 200; i++ {
			select {
			case <-stop:
				return
			default:
			}
			rev, err := e.defs.Set(fmt.Sprintf("d%d.md", i%5), fmt.Appendf(nil, "v%d", i), state.WriteOptions{Author: "cli"})
			if err != nil {
				t.Error(err)
				return
			}
			revs = append(revs, rev)
		}
	})
	wg.Go(func() {
		for i := 0; i < 200; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e.write1(fmt.Sprint("w", i), "s1", fmt.Sprintf("f%d.txt", i%5), fmt.Sprint("version ", i))
		}
	})
	for range 5 {
		if _, err := e.s.GC(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	e.fsck()
	for _, cp := range e.list(access.Person("cli"), Filter{}) {
		if _, err := e.s.Diff(access.Person("cli"), cp.ID); err != nil {
			t.Errorf("diff of %s: %v", cp.ID, err)
		}
	}
	for i, rev := range revs {
		if _, err := e.defs.Get(fmt.Sprintf("d%d.md", i%5), rev); err != nil {
			t.Errorf("definition at %s: %v", rev, err)
		}
	}
}
