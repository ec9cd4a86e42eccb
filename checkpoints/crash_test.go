package checkpoints

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
)

// crashChild is set in the environment of the child TestCrash kills: the
// workspace it records in.
const crashChild = "NEXUS_CHECKPOINTS_CRASH_CHILD"

// TestCrash kills (SIGKILL) a process that records checkpoints and
// definitions as fast as it can, once it has acknowledged some: the store
// opens again with every acknowledged checkpoint readable, and the
// definitions' history and the repository whole (git fsck).
func TestCrash(t *testing.T) {
	if ws := os.Getenv(crashChild); ws != "" {
		crashWriter(t, ws)
		return
	}
	e := newEnv(t, start)
	e.close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChild+"="+e.ws)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(acked) < 40 {
		if id, ok := strings.CutPrefix(sc.Text(), "recorded "); ok {
			acked = append(acked, id)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if len(acked) < 40 {
		t.Fatalf("the child acknowledged %d checkpoints before it stopped", len(acked))
	}

	// Opened (which repairs what a crash leaves) and closed, so that no
	// background merge of packs runs under git fsck.
	e.open()
	e.close()
	e.fsck()
	e.open()
	for _, id := range acked {
		if _, err := e.s.Diff(access.Person("cli"), id); err != nil {
			t.Errorf("acknowledged checkpoint %s: %v", id, err)
		}
	}
	if _, err := e.defs.Get("log.md", ""); err != nil {
		t.Errorf("the definitions after the crash: %v", err)
	}
	// Still usable: a call recorded and undone.
	e.write1("after", "s9", "after.txt", "after the crash")
	if _, err := e.s.Undo(context.Background(), Selector{Session: "s9"}, person()); err != nil {
		t.Fatal(err)
	}
	e.want(map[string]string{"after.txt": "<absent>"})
}

// crashWriter records until it is killed: writes and commands, and
// definitions in between, printing each acknowledged checkpoint.
func crashWriter(t *testing.T, ws string) {
	defs, err := state.OpenDefinitions(state.DefinitionsOptions{Dir: filepath.Join(ws, ".nexus", "definitions"),
		HistoryDir: filepath.Join(ws, ".nexus", "history.git")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Workspace: ws, Definitions: defs})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for i := 0; ; i++ {
			if _, err := defs.Set("log.md", fmt.Appendf(nil, "line %d", i), state.WriteOptions{Author: "cli"}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; ; i++ {
		id := fmt.Sprintf("call-%d", i)
		touch := tools.Touch{Paths: []string{fmt.Sprintf("f%d.txt", i%7)}}
		if i%5 == 0 {
			touch = tools.Touch{All: true}
		}
		end, err := s.Begin(context.Background(), tools.Call{ID: id, ToolName: "write_file", Session: "s1", Turn: fmt.Sprint(i / 3)}, touch, agent)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i%7)), fmt.Appendf(nil, "version %d", i), 0o644); err != nil {
			t.Fatal(err)
		}
		end(nil) // the call ends once its checkpoint is durable
		fmt.Printf("recorded %s\n", id)
	}
}
