package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// The helper's inherited descriptors besides stdio.
const (
	specFD   = 3 // the helperSpec, JSON, until EOF
	statusFD = 4 // the helper writes one helperStatus, JSON
)

// Upper bounds of what goes through the spec and status pipes.
const (
	maxSpecBytes   = 64 << 20
	maxStatusBytes = 64 << 10
)

// helperSpec is what the daemon sends the helper on specFD.
type helperSpec struct {
	Argv      []string
	Env       []string
	Mode      Mode
	Workspace string
	TempDir   string
	Network   bool
	MaxProcs  int
	// ABI is the Landlock ABI to enforce, exactly; 0 in Off mode.
	ABI int
	// View, when set, is built in the helper's mount namespace before
	// Landlock, and the helper then moves into Dir.
	View *View
	Dir  string
	// Writable are paths besides the workspace and TempDir that Landlock
	// lets the command write.
	Writable []string
}

// Helper status states. The helper writes stateRunning once it has read
// the command, then one of the others (or dies).
const (
	stateRunning  = "running"
	stateExited   = "exited"   // Code is the exit status
	stateSignaled = "signaled" // Code is the signal number
	stateSandbox  = "sandbox"  // the sandbox could not be enforced; nothing ran
	stateFailed   = "failed"   // the helper could not set up; nothing ran
)

// helperStatus is how the command ended, as the helper saw it.
type helperStatus struct {
	State    string
	Code     int      `json:",omitempty"`
	Message  string   `json:",omitempty"`
	Warnings []string `json:",omitempty"`
}

// HelperMain is the helper mode of nexusd: main() calls it as
// os.Exit(HelperMain(os.Args[2:])) when os.Args[1] == HelperArg. It reads
// the command from descriptor 3, applies the resource limits,
// no_new_privs, Landlock, the seccomp filter and the dropping of every
// capability for the mode, forks and execs the command with
// exactly its environment, reaps every process it inherits (in a PID
// namespace it is PID 1), and reports how the command ended on descriptor 4.
//
// It returns the exit code for the helper process: the command's, 128+n
// when signal n ended it, 127 when the program was not found and 126 when
// it could not be run or the helper could not set up (the reason is
// printed on stderr).
func HelperMain(args []string) int {
	// One thread restricts itself (no_new_privs, Landlock, seccomp, no
	// capabilities) and forks the command, which inherits that thread's
	// restrictions.
	runtime.LockOSThread()

	h := &helper{status: os.NewFile(statusFD, "status")}
	// The command must not inherit the status pipe: its end is how the
	// daemon learns that the helper is gone.
	unix.CloseOnExec(statusFD)
	if len(args) != 0 {
		return h.fail(stateFailed, 126, fmt.Sprintf("unexpected arguments %q", args))
	}
	specFile := os.NewFile(specFD, "spec")
	var s helperSpec
	err := json.NewDecoder(io.LimitReader(specFile, maxSpecBytes)).Decode(&s)
	specFile.Close()
	if err != nil {
		return h.fail(stateFailed, 126, fmt.Sprintf("reading the command: %v", err))
	}
	if len(s.Argv) == 0 {
		return h.fail(stateFailed, 126, "no command")
	}
	h.write(helperStatus{State: stateRunning})

	if err := h.limit(&s); err != nil {
		return h.fail(stateFailed, 126, err.Error())
	}
	if s.View != nil {
		if err := setupView(s.View, s.Workspace, s.Dir, s.Network); err != nil {
			return h.fail(stateSandbox, 126, fmt.Sprintf("mode %s: the command's view of the file system: %v", s.Mode, err))
		}
	}
	if err := restrict(&s); err != nil {
		return h.fail(stateSandbox, 126, fmt.Sprintf("mode %s: %v", s.Mode, err))
	}
	if err := confine(&s); err != nil {
		return h.fail(stateSandbox, 126, fmt.Sprintf("mode %s: %v", s.Mode, err))
	}

	path, err := lookPathIn("", s.Argv[0], s.Env)
	if err != nil {
		return h.execFailed(s.Argv[0], err)
	}
	pid, err := syscall.ForkExec(path, s.Argv, &syscall.ProcAttr{
		Env:   s.Env,
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		return h.execFailed(s.Argv[0], err)
	}
	return h.reap(pid)
}

type helper struct {
	status   *os.File
	warnings []string
}

// limit applies the resource limits: no core dumps, and a bound on the
// number of tasks.
func (h *helper) limit(s *helperSpec) error {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return fmt.Errorf("setrlimit(RLIMIT_CORE): %w", err)
	}
	// RLIMIT_NPROC counts every task of the real user, system-wide, and
	// the kernel ignores it for root. The command gets MaxProcs more than
	// the user already runs.
	n := uint64(s.MaxProcs)
	if uid := os.Getuid(); uid != 0 {
		n += uint64(userTasks(uid))
	}
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n}); err != nil {
		return fmt.Errorf("setrlimit(RLIMIT_NPROC): %w", err)
	}
	// As PID 1 of a fresh PID namespace, bound the namespace's pid_max:
	// that bounds tasks for root too. Before Linux 6.14 pid_max is
	// global, so it is left alone.
	if os.Getpid() == 1 {
		if err := boundPIDs(s.MaxProcs); err != nil {
			h.warnings = append(h.warnings, fmt.Sprintf("process limit not enforced in the PID namespace: %v", err))
		}
	}
	return nil
}

// reap waits for the command and reaps every other process that ends up
// a child of the helper (orphans, when it is PID 1), and reports the
// command's end.
func (h *helper) reap(pid int) int {
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return h.fail(stateFailed, 126, fmt.Sprintf("wait: %v", err))
		}
		if wpid != pid {
			continue
		}
		switch {
		case ws.Exited():
			h.report(helperStatus{State: stateExited, Code: ws.ExitStatus()})
			return ws.ExitStatus()
		case ws.Signaled():
			h.report(helperStatus{State: stateSignaled, Code: int(ws.Signal())})
			return 128 + int(ws.Signal())
		}
	}
}

// execFailed reports a command that could not be started like a shell
// does: 127 when the program is missing, 126 otherwise.
func (h *helper) execFailed(name string, err error) int {
	code := 126
	if errors.Is(err, syscall.ENOENT) {
		code = 127
	}
	fmt.Fprintf(os.Stderr, "nexus: %s: %v\n", name, err)
	h.report(helperStatus{State: stateExited, Code: code})
	return code
}

func (h *helper) fail(state string, code int, msg string) int {
	fmt.Fprintf(os.Stderr, "nexus: %s\n", msg)
	h.report(helperStatus{State: state, Code: code, Message: msg})
	return code
}

// report writes the final status.
func (h *helper) report(st helperStatus) {
	st.Warnings = h.warnings
	h.write(st)
	h.status.Close()
}

func (h *helper) write(st helperStatus) {
	b, _ := json.Marshal(st)
	h.status.Write(append(b, '\n'))
}
