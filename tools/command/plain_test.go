package command

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hangGuard bounds how long a command that should end promptly may take;
// it only catches hangs.
const hangGuard = 30 * time.Second

// plainEnv makes the test binary, run as a command by the plain runner,
// do what it names: "print" its arguments, directory and environment and
// exit 3; "tree" start a child that sleeps, print the child's PID, write
// it to pidFile (in its directory) and sleep; "spawn" the same but exit;
// "sleep".
const plainEnv = "NEXUS_TEST_PLAIN"

// pidFile is where "tree" and "spawn" write their child's PID, written
// whole by a rename.
const pidFile = "child.pid"

// plainChild does what plainEnv names, if it is set, and reports whether
// it was.
func plainChild() bool {
	switch os.Getenv(plainEnv) {
	case "":
		return false
	case "print":
		wd, _ := os.Getwd()
		fmt.Printf("args %q\ndir %s\n", os.Args[1:], wd)
		for _, kv := range os.Environ() {
			fmt.Println("env", kv)
		}
		fmt.Fprintln(os.Stderr, "to stderr")
		os.Exit(3)
	case "tree", "spawn":
		exe, _ := os.Executable()
		child, err := os.StartProcess(exe, []string{exe}, &os.ProcAttr{
			Env:   []string{plainEnv + "=sleep"},
			Files: []*os.File{nil, os.Stdout, os.Stderr},
		})
		if err != nil {
			fmt.Println("starting the child:", err)
			os.Exit(1)
		}
		fmt.Printf("child %d\n", child.Pid)
		if os.WriteFile(pidFile+".new", []byte(strconv.Itoa(child.Pid)), 0o644) != nil || os.Rename(pidFile+".new", pidFile) != nil {
			os.Exit(1)
		}
		if os.Getenv(plainEnv) == "tree" {
			time.Sleep(time.Hour)
		}
	case "sleep":
		time.Sleep(time.Hour)
	}
	return true
}

// plainSpec runs the test binary as the command, doing what.
func plainSpec(t *testing.T, what string, args ...string) Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{
		Argv:        append([]string{exe}, args...),
		Dir:         t.TempDir(),
		Env:         []string{plainEnv + "=" + what, "NEXUS_TEST_VAR=a value"},
		Timeout:     hangGuard,
		OutputLimit: 1 << 20,
		Mode:        Off,
	}
}

// runPlainSpec runs spec with the plain runner, as Off mode does outside
// Linux (on Linux Run goes through the helper).
func runPlainSpec(t *testing.T, ctx context.Context, spec Spec) Result {
	t.Helper()
	if err := spec.validate(); err != nil {
		t.Fatal(err)
	}
	res, err := NewRunner(RunnerOptions{}).runPlain(ctx, spec)
	if err != nil {
		t.Fatalf("runPlain(%q %q): %v", spec.Argv, spec.Shell, err)
	}
	return res
}

func TestPlainRun(t *testing.T) {
	spec := plainSpec(t, "print", "one", "two words", `a "quoted" \ arg`)
	res := runPlainSpec(t, context.Background(), spec)
	if res.ExitCode != 3 || res.Signal != "" || res.TimedOut || res.Truncated {
		t.Fatalf("result %+v, want exit code 3", res)
	}
	if want := fmt.Sprintf("args %q\n", spec.Argv[1:]); !strings.Contains(res.Stdout, want) {
		t.Errorf("stdout %q does not have %q", res.Stdout, want)
	}
	if res.Stderr != "to stderr\n" && res.Stderr != "to stderr\r\n" {
		t.Errorf("stderr %q", res.Stderr)
	}
	dir, _ := filepath.EvalSymlinks(spec.Dir)
	if !strings.Contains(res.Stdout, "dir "+spec.Dir+"\n") && !strings.Contains(res.Stdout, "dir "+dir+"\n") {
		t.Errorf("stdout %q does not name the directory %s", res.Stdout, spec.Dir)
	}
	var env []string
	for line := range strings.Lines(res.Stdout) {
		if kv, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "env "); ok {
			env = append(env, kv)
		}
	}
	// Exactly the spec's environment. On Windows os/exec adds SYSTEMROOT,
	// and wine its own (WINE*, SystemDrive) to every process.
	env = slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(strings.ToUpper(kv), "=")
		return runtime.GOOS == "windows" && (name == "SYSTEMROOT" || name == "SYSTEMDRIVE" || strings.HasPrefix(name, "WINE"))
	})
	slices.Sort(env)
	if !slices.Equal(env, spec.Env) {
		t.Errorf("environment %q, want %q", env, spec.Env)
	}
}

func TestPlainStdin(t *testing.T) {
	spec := plainSpec(t, "")
	spec.Argv, spec.Env = nil, nil
	spec.Shell, spec.Stdin = "sort", []byte("b\na\n")
	if runtime.GOOS == "windows" {
		t.Skip("no sort reading standard input the same way")
	}
	res := runPlainSpec(t, context.Background(), spec)
	if res.ExitCode != 0 || res.Stdout != "a\nb\n" {
		t.Fatalf("result %+v, want a and b sorted from stdin", res)
	}
}

func TestPlainShell(t *testing.T) {
	spec := plainSpec(t, "")
	spec.Argv, spec.Env = nil, nil
	spec.Shell = `echo "hello there"; exit 4`
	if runtime.GOOS == "windows" {
		spec.Shell = `echo "hello there"& exit /b 4`
	}
	res := runPlainSpec(t, context.Background(), spec)
	if res.ExitCode != 4 || !strings.Contains(res.Stdout, "hello there") {
		t.Fatalf("result %+v, want exit code 4 and the echo", res)
	}
}

func TestPlainNotFound(t *testing.T) {
	for _, prog := range []string{"no-such-program-nexus", filepath.Join("sub", "no-such-program-nexus")} {
		spec := plainSpec(t, "")
		spec.Argv = []string{prog}
		res := runPlainSpec(t, context.Background(), spec)
		if res.ExitCode != 127 || !strings.Contains(res.Stderr, prog) {
			t.Errorf("%s: result %+v, want exit code 127 and the program named", prog, res)
		}
	}
}

// parseChild is the PID a "tree" command printed.
func parseChild(t *testing.T, out string) int {
	t.Helper()
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "child "); ok {
			pid, err := strconv.Atoi(v)
			if err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no child PID in %q", out)
	return 0
}

// awaitGone waits until pid is gone (a zombie counts as gone).
func awaitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for processRunning(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPlainTimeoutKillsTree(t *testing.T) {
	spec := plainSpec(t, "tree")
	spec.Timeout = 2 * time.Second
	res := runPlainSpec(t, context.Background(), spec)
	if !res.TimedOut || res.ExitCode != -1 || res.Signal == "" {
		t.Fatalf("result %+v, want timed out, killed", res)
	}
	awaitGone(t, parseChild(t, res.Stdout))
}

func TestPlainCancelKillsTree(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec := plainSpec(t, "tree")
	done := make(chan Result, 1)
	go func() { done <- runPlainSpec(t, ctx, spec) }()
	pid := awaitPIDFile(t, spec.Dir)
	cancel()
	res := <-done
	if !res.Cancelled || res.ExitCode != -1 {
		t.Fatalf("result %+v, want cancelled, killed", res)
	}
	awaitGone(t, pid)
}

// A command that exits leaves no process behind: the rest of its tree is
// killed with it.
func TestPlainExitKillsTree(t *testing.T) {
	spec := plainSpec(t, "spawn")
	res := runPlainSpec(t, context.Background(), spec)
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("result %+v, want exit code 0", res)
	}
	awaitGone(t, awaitPIDFile(t, spec.Dir))
}

// awaitPIDFile waits for the PID a "tree" or "spawn" command writes in its
// directory once its child runs.
func awaitPIDFile(t *testing.T, dir string) int {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		b, err := os.ReadFile(filepath.Join(dir, pidFile))
		if pid, perr := strconv.Atoi(string(b)); err == nil && perr == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in %s", pidFile, dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
