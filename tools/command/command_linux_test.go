package command

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// dialEnv makes the test binary, run as a command, dial the TCP address
// it holds and print the outcome.
const dialEnv = "NEXUS_TEST_DIAL"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		os.Exit(HelperMain(os.Args[2:]))
	}
	if ws := os.Getenv(noSeccompEnv); ws != "" {
		runWithoutSeccomp(ws)
		os.Exit(0)
	}
	if plainChild() {
		os.Exit(0)
	}
	if addr := os.Getenv(dialEnv); addr != "" {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(1)
		}
		c.Close()
		fmt.Println("connected")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func newTestRunner(t *testing.T, namespaces bool) *Runner {
	t.Helper()
	r := NewRunner(RunnerOptions{HelperPath: os.Args[0], Logger: testLogger(t)})
	r.noNamespaces = !namespaces
	return r
}

// kinds are the two ways a tree is killed: with a PID namespace and by
// process group only.
var kinds = []struct {
	name       string
	namespaces bool
}{{"pidns", true}, {"pgroup", false}}

func baseSpec(t *testing.T) Spec {
	return Spec{
		Dir:         t.TempDir(),
		Env:         []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Timeout:     hangGuard,
		OutputLimit: 1 << 20,
		Mode:        Off,
	}
}

func run(t *testing.T, r *Runner, spec Spec) Result {
	t.Helper()
	res, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run(%q %q): %v", spec.Argv, spec.Shell, err)
	}
	return res
}

func TestRun(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			r := newTestRunner(t, k.namespaces)
			for _, tc := range []struct {
				name       string
				argv       []string
				shell      string
				env        []string
				stdin      string
				wantStdout string
				wantStderr string // a substring
				wantCode   int
				wantSignal string
			}{
				{name: "argv", argv: []string{"echo", "hello", "world"}, wantStdout: "hello world\n"},
				{name: "argv is not parsed by a shell", argv: []string{"echo", "$HOME", "a;b"}, wantStdout: "$HOME a;b\n"},
				{name: "shell", shell: "echo one; echo two >&2; echo three", wantStdout: "one\nthree\n", wantStderr: "two\n"},
				{name: "exit code", shell: "exit 3", wantCode: 3},
				{name: "argv exit code", argv: []string{"false"}, wantCode: 1},
				{name: "not found", argv: []string{"no-such-program-here"}, wantCode: 127, wantStderr: "command not found"},
				{name: "not found by path", argv: []string{"/no/such/program"}, wantCode: 127, wantStderr: "no such file"},
				{name: "not executable", argv: []string{"/etc/passwd"}, wantCode: 126, wantStderr: "permission denied"},
				{name: "shell not found", shell: "no-such-program-here", wantCode: 127, wantStderr: "not found"},
				{name: "no PATH", argv: []string{"sh", "-c", "echo ok"}, env: []string{}, wantStdout: "ok\n"},
				{name: "killed", shell: "kill -9 $$", wantCode: -1, wantSignal: "killed"},
				{name: "terminated", shell: "kill -TERM $$", wantCode: -1, wantSignal: "terminated"},
				{name: "stdin is empty", shell: "cat; echo done", wantStdout: "done\n"},
				{name: "stdin", shell: "cat; echo done", stdin: "a call\n", wantStdout: "a call\ndone\n"},
				{name: "stdin not read", shell: "echo done", stdin: strings.Repeat("x", 1<<20), wantStdout: "done\n"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					spec := baseSpec(t)
					spec.Argv, spec.Shell = tc.argv, tc.shell
					if tc.env != nil {
						spec.Env = tc.env
					}
					if tc.stdin != "" {
						spec.Stdin = []byte(tc.stdin)
					}
					res := run(t, r, spec)
					if res.ExitCode != tc.wantCode || res.Signal != tc.wantSignal {
						t.Errorf("exit %d, signal %q; want %d, %q (stderr %q)", res.ExitCode, res.Signal, tc.wantCode, tc.wantSignal, res.Stderr)
					}
					if res.Stdout != tc.wantStdout {
						t.Errorf("stdout %q, want %q", res.Stdout, tc.wantStdout)
					}
					if !strings.Contains(strings.ToLower(res.Stderr), tc.wantStderr) || (tc.wantStderr == "" && res.Stderr != "") {
						t.Errorf("stderr %q, want it to contain %q", res.Stderr, tc.wantStderr)
					}
					if res.TimedOut || res.Cancelled || res.Truncated {
						t.Errorf("timed out %v, cancelled %v, truncated %v", res.TimedOut, res.Cancelled, res.Truncated)
					}
				})
			}
		})
	}
}

func TestEnvIsExactlySpecEnv(t *testing.T) {
	t.Setenv("NEXUS_LEAK", "daemon")
	r := newTestRunner(t, true)
	for _, env := range [][]string{
		{},
		{"A=1", "B=two words", "C="},
		{"PATH=/usr/bin", "HOME=/nowhere"},
	} {
		spec := baseSpec(t)
		spec.Argv = []string{"/usr/bin/env"}
		spec.Env = env
		res := run(t, r, spec)
		want := ""
		for _, kv := range env {
			want += kv + "\n"
		}
		if res.Stdout != want {
			t.Errorf("env %q: command saw %q", env, res.Stdout)
		}
	}
}

func TestDir(t *testing.T) {
	r := newTestRunner(t, true)
	spec := baseSpec(t)
	spec.Argv = []string{"pwd", "-P"}
	want, err := filepath.EvalSymlinks(spec.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, r, spec); res.Stdout != want+"\n" {
		t.Errorf("pwd = %q, want %q", res.Stdout, want)
	}

	spec.Dir = filepath.Join(spec.Dir, "missing")
	if _, err := r.Run(context.Background(), spec); err == nil {
		t.Errorf("Run in a missing directory: no error")
	}
}

func TestBadSpec(t *testing.T) {
	r := newTestRunner(t, true)
	for _, tc := range []struct {
		name string
		edit func(*Spec)
	}{
		{"no command", func(s *Spec) { s.Argv, s.Shell = nil, "" }},
		{"both forms", func(s *Spec) { s.Argv, s.Shell = []string{"true"}, "true" }},
		{"relative dir", func(s *Spec) { s.Dir = "rel" }},
		{"no timeout", func(s *Spec) { s.Timeout = 0 }},
		{"no output limit", func(s *Spec) { s.OutputLimit = 0 }},
		{"bad env", func(s *Spec) { s.Env = []string{"NOEQUALS"} }},
		{"NUL", func(s *Spec) { s.Argv = []string{"echo", "a\x00b"} }},
		{"unknown mode", func(s *Spec) { s.Mode = "lax" }},
		{"relative workspace", func(s *Spec) { s.Mode, s.Workspace = WorkspaceWrite, "ws" }},
		{"missing workspace", func(s *Spec) { s.Mode, s.Workspace = WorkspaceWrite, "/no/such/workspace" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseSpec(t)
			spec.Argv = []string{"true"}
			tc.edit(&spec)
			if _, err := r.Run(context.Background(), spec); err == nil {
				t.Errorf("Run: no error")
			}
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	spec := baseSpec(t)
	spec.Argv = []string{"true"}
	if _, err := r.Run(ctx, spec); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a done context: %v, want context.Canceled", err)
	}
}

// treeScript starts background children (one of them in a session of its
// own when setsid is set), prints their PIDs as the daemon sees them
// (/proc is the daemon's, also inside a PID namespace), and then waits.
func treeScript(setsid bool, then string) string {
	s := "sleep 100 &\n"
	if setsid {
		s += "setsid sleep 100 &\n"
	}
	return s + `read -r self rest < /proc/self/stat
read -r kids < /proc/$self/task/$self/children
echo "$self $kids"
` + then + "\nsleep 100\n"
}

func parsePIDs(t *testing.T, out string, want int) []int {
	t.Helper()
	var pids []int
	for f := range strings.FieldsSeq(out) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) != want {
		t.Fatalf("output %q: %d pids, want %d", out, len(pids), want)
	}
	return pids
}

// assertGone fails unless every pid is gone. With a PID namespace they are
// gone when Run returns; without, SIGKILL to the process group is
// asynchronous and orphans are reaped by init (or, where init does not
// reap, stay zombies), so it waits, up to the hang guard, for each to be
// gone or a zombie.
func assertGone(t *testing.T, pids []int, wait bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for _, pid := range pids {
		for {
			state := procState(pid)
			if state == "" || state == "Z" {
				break
			}
			if !wait || time.Now().After(deadline) {
				t.Errorf("process %d is still there (state %s)", pid, state)
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// procState returns a process's state letter, or "" when it is gone.
func procState(pid int) string {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return "?"
}

func TestTimeoutKillsTree(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			r := newTestRunner(t, k.namespaces)
			spec := baseSpec(t)
			// Without a PID namespace a setsid child escapes; that case
			// is TestEscapedChildDoesNotHoldRun.
			spec.Shell = treeScript(k.namespaces, "")
			spec.Timeout = 500 * time.Millisecond
			res := run(t, r, spec)
			if !res.TimedOut || res.ExitCode != -1 || res.Signal != "killed" {
				t.Errorf("timed out %v, exit %d, signal %q; want true, -1, killed", res.TimedOut, res.ExitCode, res.Signal)
			}
			if res.Duration > hangGuard {
				t.Errorf("Run took %v", res.Duration)
			}
			want := 2
			if k.namespaces {
				want = 3
			}
			assertGone(t, parsePIDs(t, res.Stdout, want), !k.namespaces)
		})
	}
}

// TestExitKillsTree checks that background children holding stdout do not
// outlive a command that exits, nor keep Run waiting.
func TestExitKillsTree(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			r := newTestRunner(t, k.namespaces)
			spec := baseSpec(t)
			spec.Shell = strings.TrimSuffix(treeScript(k.namespaces, "exit 4"), "sleep 100\n")
			res := run(t, r, spec)
			if res.TimedOut || res.ExitCode != 4 {
				t.Errorf("timed out %v, exit %d; want false, 4", res.TimedOut, res.ExitCode)
			}
			want := 2
			if k.namespaces {
				want = 3
			}
			assertGone(t, parsePIDs(t, res.Stdout, want), !k.namespaces)
		})
	}
}

// TestEscapedChildDoesNotHoldRun: without a PID namespace a setsid child
// escapes the process group kill and holds stdout open; Run still returns.
func TestEscapedChildDoesNotHoldRun(t *testing.T) {
	r := newTestRunner(t, false)
	spec := baseSpec(t)
	// Print the child's PID once it is in a session of its own.
	spec.Shell = `setsid sleep 100 & pid=$!
until read -r _ _ _ _ _ sid _ < /proc/$pid/stat && [ "$sid" = "$pid" ]; do :; done
echo $pid`
	res := run(t, r, spec)
	pid, err := strconv.Atoi(strings.TrimSpace(res.Stdout))
	if err != nil {
		t.Fatalf("stdout %q: %v", res.Stdout, err)
	}
	state := procState(pid)
	unix.Kill(pid, unix.SIGKILL)
	if res.ExitCode != 0 || res.TimedOut {
		t.Errorf("exit %d, timed out %v", res.ExitCode, res.TimedOut)
	}
	if state == "" || state == "Z" {
		t.Errorf("the setsid child did not escape (state %q): the test tests nothing", state)
	}
}

func TestCancelKillsTree(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			r := newTestRunner(t, k.namespaces)
			spec := baseSpec(t)
			ready := filepath.Join(t.TempDir(), "ready")
			spec.Shell = treeScript(k.namespaces, "touch "+ready)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				deadline := time.Now().Add(hangGuard)
				for time.Now().Before(deadline) {
					if _, err := os.Stat(ready); err == nil {
						break
					}
					time.Sleep(time.Millisecond)
				}
				cancel()
			}()
			res, err := r.Run(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Cancelled || res.TimedOut || res.Signal != "killed" {
				t.Errorf("cancelled %v, timed out %v, signal %q; want true, false, killed", res.Cancelled, res.TimedOut, res.Signal)
			}
			want := 2
			if k.namespaces {
				want = 3
			}
			assertGone(t, parsePIDs(t, res.Stdout, want), !k.namespaces)
		})
	}
}

func TestOutputFlood(t *testing.T) {
	const limit = 64 << 10
	const marker = 64 // "\n…[N bytes omitted]…\n" and then some
	r := newTestRunner(t, true)
	t.Run("stdout", func(t *testing.T) {
		spec := baseSpec(t)
		spec.Argv = []string{"yes"}
		spec.OutputLimit = limit
		spec.Timeout = time.Second
		res := run(t, r, spec)
		if !res.TimedOut || !res.Truncated {
			t.Errorf("timed out %v, truncated %v; want both", res.TimedOut, res.Truncated)
		}
		if !strings.HasPrefix(res.Stdout, "y\ny\n") || !strings.Contains(res.Stdout, " bytes omitted]…\n") || res.Stderr != "" {
			t.Errorf("stdout %.40q…, stderr %.40q; want y lines with the omission marker", res.Stdout, res.Stderr)
		}
		if n := len(res.Stdout); n > limit+marker || n < limit {
			t.Errorf("kept %d bytes for a limit of %d", n, limit)
		}
	})
	t.Run("both", func(t *testing.T) {
		spec := baseSpec(t)
		spec.Shell = "yes & yes >&2"
		spec.OutputLimit = limit
		spec.Timeout = time.Second
		res := run(t, r, spec)
		if !res.TimedOut || !res.Truncated {
			t.Errorf("timed out %v, truncated %v; want both", res.TimedOut, res.Truncated)
		}
		if n := len(res.Stdout) + len(res.Stderr); n > limit+2*marker {
			t.Errorf("kept %d bytes for a limit of %d", n, limit)
		}
	})
}

func TestConcurrent(t *testing.T) {
	r := newTestRunner(t, true)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			spec := baseSpec(t)
			spec.Shell = fmt.Sprintf(`i=%d; echo "$i"; echo "err $i" >&2; exit $((i %% 7))`, i)
			res, err := r.Run(context.Background(), spec)
			if err != nil {
				t.Error(err)
				return
			}
			if res.Stdout != fmt.Sprintf("%d\n", i) || res.Stderr != fmt.Sprintf("err %d\n", i) || res.ExitCode != i%7 {
				t.Errorf("command %d: stdout %q, stderr %q, exit %d", i, res.Stdout, res.Stderr, res.ExitCode)
			}
		})
	}
	wg.Wait()
}

func TestNotAHelper(t *testing.T) {
	r := NewRunner(RunnerOptions{HelperPath: "/bin/true", Logger: testLogger(t)})
	spec := baseSpec(t)
	spec.Argv = []string{"echo", "hi"}
	if _, err := r.Run(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "HelperMain") {
		t.Errorf("Run with /bin/true as the helper: %v, want an error naming HelperMain", err)
	}
}
