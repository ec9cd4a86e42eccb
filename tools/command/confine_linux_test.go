package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
)

// noSeccompEnv makes the test binary (see TestMain) run a sandboxed
// command under a filter that refuses seccomp(2), and print what Run says.
const noSeccompEnv = "NEXUS_TEST_NO_SECCOMP"

// TestConfinement: in both sandboxed modes, with and without a view, the
// command holds no capability (as root: not even in its bounding set),
// runs with no_new_privs under the seccomp filter, and cannot make a user
// or mount namespace; with a view its /dev has no disks and, without
// network, its /run is empty (no system daemon's socket). Off mode is
// unconfined. TestViewWithoutRoot runs it as another user too.
func TestConfinement(t *testing.T) {
	requireLandlock(t)
	ws := t.TempDir()
	script := `grep -E '^(Cap|NoNewPrivs|Seccomp:)' /proc/self/status
unshare -r true 2>&1 || echo no-userns
unshare -m true 2>&1 || echo no-mountns
echo dev: $(ls /dev)
echo run: $(ls -A /run | wc -l)
`
	r := newTestRunner(t, true)
	for _, mode := range []Mode{ReadOnly, WorkspaceWrite, Off} {
		for _, view := range []*View{nil, {}} {
			t.Run(fmt.Sprintf("%s/view=%v", mode, view != nil), func(t *testing.T) {
				spec := baseSpec(t)
				spec.Mode, spec.Workspace, spec.Dir, spec.View, spec.Shell = mode, ws, ws, view, script
				res := run(t, r, spec)
				out := res.Stdout + res.Stderr
				if mode == Off {
					if !strings.Contains(out, "Seccomp:\t0\n") {
						t.Errorf("off mode has a filter:\n%s", out)
					}
					return
				}
				want := []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
					"CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "Operation not permitted\nno-userns", "Operation not permitted\nno-mountns"}
				if os.Geteuid() == 0 || view != nil {
					want = append(want, "CapBnd:\t0000000000000000")
				}
				if view != nil {
					want = append(want, "dev: fd full null random shm stderr stdin stdout tty urandom zero\n", "run: 0\n")
				}
				for _, w := range want {
					if !strings.Contains(out, w) {
						t.Errorf("no %q in:\n%s", w, out)
					}
				}
			})
		}
	}
}

// TestConfinementFailsClosed: where the seccomp filter cannot be
// installed, the command does not run and Run says why.
func TestConfinementFailsClosed(t *testing.T) {
	requireLandlock(t)
	ws := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), noSeccompEnv+"="+ws)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "command sandbox unavailable: mode workspace-write: seccomp(SECCOMP_SET_MODE_FILTER): operation not permitted") {
		t.Errorf("Run under a filter that refuses seccomp(2):\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran")
	}
}

// runWithoutSeccomp is TestConfinementFailsClosed's inner run: it refuses
// seccomp(2) to itself and its children, then runs a command that would
// create ws/ran, and prints Run's error.
func runWithoutSeccomp(ws string) {
	err := seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls:      []seccomp.SyscallGroup{{Names: []string{"seccomp"}, Action: seccomp.ActionErrno}},
		},
	})
	if err != nil {
		fmt.Println("loading the test's filter:", err)
		return
	}
	r := NewRunner(RunnerOptions{HelperPath: os.Args[0]})
	_, err = r.Run(context.Background(), Spec{Shell: "touch ran", Dir: ws, Workspace: ws, Mode: WorkspaceWrite,
		Timeout: hangGuard, OutputLimit: 1 << 10, View: &View{}})
	fmt.Println("Run:", err)
}
