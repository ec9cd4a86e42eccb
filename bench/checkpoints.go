package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/checkpoints"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/core"
)

// benchCheckpoints prints what workspace checkpoints cost, each beside
// `git add -A && git commit` of the same change in a copy of the
// workspace, measured in the same run: the time a checkpoint adds to a
// write_file (the manager's call with the recorder, less the same call
// without), the time it adds to a command in a workspace of 10,000 files
// (the recorder's Begin and end of a call that may change any file,
// around a change the bench makes: the command sandbox may be missing
// here), and the disk 1,000 edits of a 10 KB file take after gc, against
// git's after git gc.
func benchCheckpoints(tmp string) error {
	fmt.Println()
	if err := benchCheckpointWrite(filepath.Join(tmp, "cp-write")); err != nil {
		return err
	}
	if err := benchCheckpointCommand(filepath.Join(tmp, "cp-command")); err != nil {
		return err
	}
	return benchCheckpointDisk(filepath.Join(tmp, "cp-disk"))
}

// checkpointed is a workspace with its definitions and checkpoints open.
type checkpointed struct {
	ws    string
	defs  *state.Definitions
	store *checkpoints.Store
}

func openCheckpointed(ws string) (*checkpointed, error) {
	defs, err := state.OpenDefinitions(state.DefinitionsOptions{Dir: filepath.Join(ws, ".nexus", "definitions"),
		HistoryDir: filepath.Join(ws, ".nexus", "history.git")})
	if err != nil {
		return nil, err
	}
	s, err := checkpoints.Open(checkpoints.Options{Workspace: ws, Definitions: defs})
	if err != nil {
		defs.Close()
		return nil, err
	}
	return &checkpointed{ws, defs, s}, nil
}

func (c *checkpointed) close() {
	c.store.Close()
	c.defs.Close()
}

// makeFiles writes n files of about 1 KB under ws, and a .gitignore.
func makeFiles(ws string, n int) error {
	for i := range n {
		p := filepath.Join(ws, fmt.Sprintf("src/pkg%03d/file%05d.go", i/100, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(strings.Repeat(fmt.Sprintf("// file %d\n", i), 80)), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(ws, ".gitignore"), []byte(".nexus/\n"), 0o644)
}

// gitCopy copies ws's files (not .nexus/) into dir and commits them there.
func gitCopy(ws, dir string) error {
	err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ws, p)
		if d.IsDir() {
			if rel == ".nexus" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "start"}} {
		if err := gitIn(dir, args...); err != nil {
			return err
		}
	}
	return nil
}

func gitIn(dir string, args ...string) error {
	cmd := gitCmd("", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %v: %s", args, err, out)
	}
	return nil
}

// gitCommitChange times `git add -A && git commit` of one change in dir.
func gitCommitChange(dir string, n int, change func(dir string, i int) error) (time.Duration, error) {
	i := 0
	return timeIt(n, func() error {
		i++
		if err := change(dir, i); err != nil {
			return err
		}
		if err := gitIn(dir, "add", "-A"); err != nil {
			return err
		}
		return gitIn(dir, "commit", "-q", "-m", fmt.Sprint("change ", i))
	})
}

// allowAll is a gate that lets every call run.
func allowAll(context.Context, *tools.GateRequest, func(tools.ICERC)) error { return nil }

func benchCheckpointWrite(ws string) error {
	if err := makeFiles(ws, 100); err != nil {
		return err
	}
	c, err := openCheckpointed(ws)
	if err != nil {
		return err
	}
	defer c.close()
	ct, err := core.New(core.Config{Workspace: ws, DefinitionsDir: c.defs.Dir(), Definitions: c.defs})
	if err != nil {
		return err
	}
	defer ct.Close()
	managers := map[bool]*tools.Manager{}
	for _, recorded := range []bool{false, true} {
		o := tools.Options{Gate: allowAll}
		if recorded {
			o.Recorder = c.store
		}
		m, err := tools.NewManager(o)
		if err != nil {
			return err
		}
		defer m.Close()
		for _, t := range ct.List() {
			if t.Name == "write_file" && t.Touches == nil {
				return fmt.Errorf("write_file says nothing of what it touches: no checkpoint to measure")
			}
			if err := m.Register(t); err != nil {
				return err
			}
		}
		managers[recorded] = m
	}
	agent := access.Person("cli").Agent("bench")
	i := 0
	write := func(recorded bool) func() error {
		return func() error {
			i++
			args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("src/pkg000/file%05d.go", i%100), "content": fmt.Sprintf("// version %d\n", i)})
			call := managers[recorded].Execute(context.Background(), tools.ExecuteRequest{ToolName: "write_file", Party: agent,
				Arguments: args, Session: "bench", Turn: fmt.Sprint(i / 10)})
			if call.Error != nil {
				return fmt.Errorf("write_file: %s", call.Error.Message)
			}
			return nil
		}
	}
	const n = 200
	var with, without []time.Duration
	for range n {
		for _, recorded := range []bool{false, true} {
			t := time.Now()
			if err := write(recorded)(); err != nil {
				return err
			}
			if recorded {
				with = append(with, time.Since(t))
			} else {
				without = append(without, time.Since(t))
			}
		}
	}
	if cps, _ := c.store.List(agent, checkpoints.Filter{Session: "bench"}); len(cps) < n {
		return fmt.Errorf("%d checkpoints of %d writes", len(cps), n)
	}
	added := max(median(with)-median(without), 0)

	dir := ws + "-git"
	if err := gitCopy(ws, dir); err != nil {
		return err
	}
	anchor, err := gitCommitChange(dir, 50, func(dir string, i int) error {
		return os.WriteFile(filepath.Join(dir, fmt.Sprintf("src/pkg000/file%05d.go", i%100)), fmt.Appendf(nil, "// version %d\n", i), 0o644)
	})
	if err != nil {
		return err
	}
	report(fmt.Sprintf("checkpoint added to write_file, p50 (%v→%v)", median(without).Round(time.Microsecond), median(with).Round(time.Microsecond)),
		added, anchor, "git add -A && git commit, 100 files", "≤ 0.2×")
	return nil
}

func benchCheckpointCommand(ws string) error {
	const files = 10_000
	if err := makeFiles(ws, files); err != nil {
		return err
	}
	dir := ws + "-git"
	if err := gitCopy(ws, dir); err != nil {
		return err
	}
	c, err := openCheckpointed(ws)
	if err != nil {
		return err
	}
	defer c.close()
	agent := access.Person("cli").Agent("bench")
	change := func(dir string, i int) error {
		return os.WriteFile(filepath.Join(dir, fmt.Sprintf("src/pkg%03d/file%05d.go", i%100, i%100*100)), fmt.Appendf(nil, "// changed %d\n", i), 0o644)
	}
	// Ours and git's alternate, so that both see the same machine.
	var ours, theirs []time.Duration
	first := time.Now()
	for i := 1; i <= 41; i++ {
		t := time.Now()
		end, err := c.store.Begin(context.Background(), tools.Call{ID: fmt.Sprint("cmd-", i), ToolName: "execute_command", Session: "bench", Turn: fmt.Sprint(i)},
			tools.Touch{All: true}, agent)
		if err != nil {
			return err
		}
		began := time.Since(t)
		if err := change(ws, i); err != nil {
			return err
		}
		t = time.Now()
		end(nil)
		if i == 1 { // it waited for the first scan of the workspace
			fmt.Printf("%-44s %10v   (a full read, in the background from Open)\n", "first scan of 10,000 files", time.Since(first).Round(time.Millisecond))
			continue
		}
		ours = append(ours, began+time.Since(t))
		if err := change(dir, i); err != nil {
			return err
		}
		t = time.Now()
		if err := gitIn(dir, "add", "-A"); err != nil {
			return err
		}
		if err := gitIn(dir, "commit", "-q", "-m", fmt.Sprint("change ", i)); err != nil {
			return err
		}
		theirs = append(theirs, time.Since(t))
	}
	if cps, _ := c.store.List(agent, checkpoints.Filter{Session: "bench"}); len(cps) != 41 {
		return fmt.Errorf("%d checkpoints of 41 commands", len(cps))
	}
	report("checkpoint of a command, 10,000 files, p50", median(ours), median(theirs), "git add -A && git commit, same files", "≤ 0.5×; Begin+end around a change the bench makes")
	return nil
}

func benchCheckpointDisk(ws string) error {
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	const edits = 1000
	content := func(i int) []byte {
		var b strings.Builder
		for line := range 200 { // 10 KB: 200 lines of 50 bytes
			v := 0
			if line == i%200 {
				v = i
			}
			fmt.Fprintf(&b, "line %03d of the file, edited at step %08d....\n", line, v)
		}
		return []byte(b.String())
	}
	p := filepath.Join(ws, "edited.txt")
	if err := os.WriteFile(p, content(0), 0o644); err != nil {
		return err
	}
	dir := ws + "-git"
	if err := gitCopy(ws, dir); err != nil {
		return err
	}
	if err := gitIn(dir, "gc", "-q"); err != nil {
		return err
	}
	gitBefore, err := dirSize(filepath.Join(dir, ".git", "objects"))
	if err != nil {
		return err
	}
	c, err := openCheckpointed(ws)
	if err != nil {
		return err
	}
	defer c.close()
	if _, err := c.store.GC(context.Background()); err != nil {
		return err
	}
	ours0, err := c.defs.Changes().Size()
	if err != nil {
		return err
	}
	agent := access.Person("cli").Agent("bench")
	for i := 1; i <= edits; i++ {
		end, err := c.store.Begin(context.Background(), tools.Call{ID: fmt.Sprint("edit-", i), ToolName: "edit_file", Session: "bench", Turn: fmt.Sprint(i)},
			tools.Touch{Paths: []string{"edited.txt"}}, agent)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, content(i), 0o644); err != nil {
			return err
		}
		end(nil)
		if err := os.WriteFile(filepath.Join(dir, "edited.txt"), content(i), 0o644); err != nil {
			return err
		}
		if err := gitIn(dir, "commit", "-q", "-a", "-m", fmt.Sprint("edit ", i)); err != nil {
			return err
		}
	}
	gc, err := c.store.GC(context.Background())
	if err != nil {
		return err
	}
	if err := gitIn(dir, "gc", "-q"); err != nil {
		return err
	}
	gitAfter, err := dirSize(filepath.Join(dir, ".git", "objects"))
	if err != nil {
		return err
	}
	ours, theirs := gc.BytesAfter-ours0, gitAfter-gitBefore
	fmt.Printf("%-44s %7d KiB   %-34s %7d KiB   ratio %.4f×   (target ≤ 2×; before gc: %d KiB)\n",
		"disk of 1,000 edits of a 10 KB file, after gc", ours/1024, "vs git, 1,000 commits, after git gc", theirs/1024,
		float64(ours)/float64(theirs), (gc.BytesBefore-ours0)/1024)
	return nil
}

// dirSize sums the sizes of the files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}
