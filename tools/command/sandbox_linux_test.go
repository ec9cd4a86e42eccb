package command

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func requireLandlock(t *testing.T) int {
	t.Helper()
	abi, err := kernelABI()
	if err != nil || abi < minNetABI {
		t.Skipf("Landlock ABI %d (%v): the sandboxed modes need %d", abi, err, minNetABI)
	}
	return abi
}

// sandboxDirs returns a workspace and a directory next to it, both
// outside os.TempDir() (which workspace-write mode may write), and the path
// of a file in os.TempDir().
func sandboxDirs(t *testing.T) (ws, outside, tmpFile string) {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "nexus-command-")
	if err != nil {
		t.Skipf("no directory outside the temporary directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if rel, err := filepath.Rel(os.TempDir(), base); err == nil && !strings.HasPrefix(rel, "..") {
		t.Skipf("%s is inside the temporary directory %s", base, os.TempDir())
	}
	ws, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "existing"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws, outside, filepath.Join(t.TempDir(), "tmpfile")
}

func TestSandboxModes(t *testing.T) {
	requireLandlock(t)
	ws, outside, tmpFile := sandboxDirs(t)
	type check struct {
		name   string
		shell  string
		denied bool   // exits non-zero with "Permission denied"
		absent string // a file that must not exist afterwards
		stdout string
	}
	reads := []check{
		{name: "read everywhere", shell: "head -c 4 /etc/passwd >/dev/null && ls / >/dev/null && echo ok", stdout: "ok\n"},
		{name: "devices", shell: "echo x >/dev/null && head -c 4 /dev/urandom | wc -c && head -c 2 /dev/zero | wc -c && echo y >/dev/stdout && echo z >/dev/stderr", stdout: "4\n2\ny\n"},
		{name: "remove outside", shell: "rm -f " + outside + "/existing", denied: true},
		{name: "write outside", shell: "echo x > " + outside + "/new", denied: true, absent: outside + "/new"},
		{name: "mkdir outside", shell: "mkdir " + outside + "/dir", denied: true, absent: outside + "/dir"},
		{name: "truncate outside", shell: "truncate -s 0 " + outside + "/existing", denied: true},
	}
	for _, tc := range []struct {
		mode   Mode
		checks []check
	}{
		{WorkspaceWrite, append(reads,
			check{name: "write in workspace", shell: "echo hi > f && mkdir -p d && ln f d/link && mv d/link d/moved && cat d/moved && rm f d/moved && rmdir d", stdout: "hi\n"},
			check{name: "write in temp dir", shell: "echo t > " + tmpFile + " && cat " + tmpFile + " && rm " + tmpFile, stdout: "t\n"},
			check{name: "move out of the workspace", shell: "echo x > f && mv f " + outside + "/moved; s=$?; rm -f f; exit $s", denied: true, absent: outside + "/moved"},
		)},
		{ReadOnly, append(reads,
			check{name: "write in workspace", shell: "echo hi > f", denied: true, absent: ws + "/f"},
			check{name: "write in temp dir", shell: "echo t > " + tmpFile, denied: true, absent: tmpFile},
		)},
		{Off, []check{
			{name: "write outside", shell: "echo x > " + outside + "/off && cat " + outside + "/off && rm " + outside + "/off", stdout: "x\n"},
		}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			r := newTestRunner(t, true)
			for _, c := range tc.checks {
				t.Run(c.name, func(t *testing.T) {
					spec := baseSpec(t)
					spec.Mode, spec.Workspace, spec.Dir = tc.mode, ws, ws
					spec.Shell = c.shell
					res := run(t, r, spec)
					if c.denied {
						if res.ExitCode == 0 || !strings.Contains(res.Stderr, "Permission denied") {
							t.Errorf("exit %d, stderr %q; want a failure with Permission denied", res.ExitCode, res.Stderr)
						}
					} else if res.ExitCode != 0 || res.Stdout != c.stdout {
						t.Errorf("exit %d, stdout %q, stderr %q; want 0, %q", res.ExitCode, res.Stdout, res.Stderr, c.stdout)
					}
					if c.absent != "" {
						if _, err := os.Lstat(c.absent); !errors.Is(err, os.ErrNotExist) {
							t.Errorf("%s exists (%v)", c.absent, err)
						}
					}
					if b, err := os.ReadFile(filepath.Join(outside, "existing")); err != nil || string(b) != "keep\n" {
						t.Errorf("outside/existing = %q, %v", b, err)
					}
				})
			}
		})
	}
}

func TestNetwork(t *testing.T) {
	requireLandlock(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ws, _, _ := sandboxDirs(t)
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			r := newTestRunner(t, k.namespaces)
			for _, tc := range []struct {
				mode    Mode
				network bool
				want    string
			}{
				{WorkspaceWrite, false, "permission denied"},
				{ReadOnly, false, "permission denied"},
				{WorkspaceWrite, true, "connected"},
				{ReadOnly, true, "connected"},
				{Off, false, "connected"},
			} {
				t.Run(string(tc.mode)+"/network="+strconv.FormatBool(tc.network), func(t *testing.T) {
					spec := baseSpec(t)
					spec.Mode, spec.Workspace, spec.Dir, spec.Network = tc.mode, ws, ws, tc.network
					spec.Argv = []string{os.Args[0]}
					// GORACE: a race-enabled binary otherwise lingers 1s at exit.
					spec.Env = []string{dialEnv + "=" + ln.Addr().String(), "GORACE=atexit_sleep_ms=0"}
					res := run(t, r, spec)
					if !strings.Contains(res.Stdout, tc.want) {
						t.Errorf("stdout %q, stderr %q; want %q", res.Stdout, res.Stderr, tc.want)
					}
				})
			}
		})
	}
}

func TestSandboxUnavailable(t *testing.T) {
	kernel := requireLandlock(t)
	ws, _, _ := sandboxDirs(t)
	ran := filepath.Join(ws, "ran")
	for _, tc := range []struct {
		name    string
		abi     int
		abiErr  error
		mode    Mode
		network bool
		want    string
	}{
		{name: "no landlock", abiErr: errors.New("landlock is not enabled"), mode: ReadOnly, want: "mode read-only: landlock is not enabled"},
		{name: "old landlock", abi: 2, mode: WorkspaceWrite, network: true, want: "mode workspace-write needs Landlock ABI 3"},
		{name: "no network rules", abi: 3, mode: ReadOnly, want: "mode read-only without network needs Landlock ABI 4"},
		// The daemon believes the kernel supports more than it does: the
		// helper's strict request fails, and it runs nothing.
		{name: "helper refuses", abi: kernel + 1, mode: WorkspaceWrite, want: "mode workspace-write: landlock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.abi > maxLibABI {
				t.Skipf("the kernel has the newest ABI go-landlock knows")
			}
			r := newTestRunner(t, true)
			r.kernelABI = func() (int, error) { return tc.abi, tc.abiErr }
			spec := baseSpec(t)
			spec.Mode, spec.Workspace, spec.Dir, spec.Network = tc.mode, ws, ws, tc.network
			spec.Shell = "touch " + ran
			_, err := r.Run(context.Background(), spec)
			if !errors.Is(err, ErrSandboxUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: %v; want ErrSandboxUnavailable saying %q", err, tc.want)
			}
			if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the command ran")
			}
		})
	}
}

// TestForkLoop runs a fork loop under a process limit. In a PID namespace
// on Linux 6.14+ the namespace's pid_max bounds it, for root too; without
// one, RLIMIT_NPROC bounds it for other users. Either way the loop ends
// by itself, and the daemon can run commands afterwards.
func TestForkLoop(t *testing.T) {
	const maxProcs = 20
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			switch {
			case k.namespaces && !kernelAtLeast(6, 14):
				t.Skip("pid_max is per PID namespace from Linux 6.14")
			case k.namespaces && os.Getuid() != 0:
				t.Skip("PID namespaces need root")
			case !k.namespaces && os.Getuid() == 0:
				t.Skip("RLIMIT_NPROC does not bind root, and without a PID namespace nothing else bounds its forks")
			}
			r := newTestRunner(t, k.namespaces)
			spec := baseSpec(t)
			spec.MaxProcs = maxProcs
			spec.Shell = `i=0; while :; do sleep 100 & i=$((i+1)); echo $i; done`
			res := run(t, r, spec)
			if res.TimedOut || res.ExitCode == 0 || !strings.Contains(res.Stderr, "fork") {
				t.Errorf("timed out %v, exit %d, stderr %q; want the loop to fail to fork", res.TimedOut, res.ExitCode, res.Stderr)
			}
			lines := strings.Fields(res.Stdout)
			if len(lines) == 0 {
				t.Fatalf("no output")
			}
			n, _ := strconv.Atoi(lines[len(lines)-1])
			if bound := maxProcs + pidReserve; n > bound {
				t.Errorf("%d processes started, want at most %d", n, bound)
			}
			t.Logf("%d processes started", n)

			if k.namespaces {
				// A fork bomb whose processes survive failed forks runs
				// until the timeout kills its tree.
				spec = baseSpec(t)
				spec.MaxProcs = maxProcs
				spec.Shell = "(f() { f | f & }; f); exec sleep 100"
				spec.Timeout = time.Second
				if res := run(t, r, spec); !res.TimedOut || res.Signal != "killed" || !strings.Contains(res.Stderr, "fork") {
					t.Errorf("fork bomb: timed out %v, exit %d, signal %q, stderr %.100q…%.300q; want a timeout after failed forks",
						res.TimedOut, res.ExitCode, res.Signal, res.Stderr, res.Stderr[max(0, len(res.Stderr)-300):])
				}
			}

			spec = baseSpec(t)
			spec.Shell = "echo still fine"
			if res := run(t, r, spec); res.Stdout != "still fine\n" {
				t.Errorf("after the loop: stdout %q, stderr %q", res.Stdout, res.Stderr)
			}
		})
	}
}
