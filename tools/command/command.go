// Package command runs the commands of execute_command: confined,
// time-limited, output-capped, and killed as a whole tree. Start with
// [Runner.Run].
//
// The confinement (the sandboxed modes [ReadOnly] and [WorkspaceWrite])
// is Linux's, and what follows describes Linux. Elsewhere (macOS,
// Windows) Run refuses the sandboxed modes with [ErrSandboxUnavailable],
// naming the platform, and runs [Off] mode as a plain child of the daemon
// in a process tree of its own (internal/proctree: a process group on
// unix, a Job Object that kills on close on Windows): exactly its
// environment, the timeout, the output cap and the kill of the whole tree
// on timeout, cancellation and exit apply; the process limit only on
// Windows (the job's active process limit); no core dump limit. A shell
// script runs as /bin/sh -c there, as cmd.exe /d /s /c on Windows. If the
// daemon dies while such a command runs, Windows kills its tree with the
// job; macOS has no way to, and the command runs on until it ends.
//
// On Linux, a command does not run as a child of the daemon directly. The daemon
// re-executes itself as a helper ([HelperMain], selected by [HelperArg]) in
// a new session and, where the kernel allows it, in a new PID namespace
// (and a new network namespace when a sandboxed command has no network).
// The helper applies the resource limits, no_new_privs, Landlock, the
// seccomp filter and the dropping of every capability for the [Mode],
// forks and execs the command, reaps it (it is PID 1 of the
// namespace) and reports how it ended on a pipe. When the helper exits,
// the kernel kills whatever is left in the namespace; on timeout or
// cancellation the daemon SIGKILLs the helper and its process group.
//
// What is enforced, and how:
//
//   - Tree kill: the PID namespace, which catches setsid children too,
//     plus the process group. Without CAP_SYS_ADMIN there is no PID
//     namespace (the Runner logs it once): only the process group is
//     killed, a child that calls setsid escapes it, and Run stops reading
//     output that such a child holds open one second after the command.
//   - Filesystem ([ReadOnly], [WorkspaceWrite]): Landlock at the highest
//     ABI both the kernel and go-landlock know, never best effort, and at
//     least ABI 3 so that truncate(2) is covered. If it cannot be enforced,
//     the command does not run and Run returns [ErrSandboxUnavailable].
//     Off mode has neither Landlock nor no_new_privs.
//   - Privileges ([ReadOnly], [WorkspaceWrite]), whatever the daemon's
//     uid: the command holds no capability (effective, permitted,
//     inheritable, ambient and bounding sets empty; securebits noroot and
//     no-ambient-raise locked), so a daemon running as root runs it as a
//     uid 0 with no more power than file permissions give; and it runs
//     under a seccomp filter after Docker's default profile (files by
//     handle, mounts, namespaces, ptrace and other processes' memory,
//     kernel modules, kexec, BPF, perf, keys, io_uring, userfaultfd, the
//     clock, swap, reboot: EPERM; clone3: ENOSYS; another ABI: killed;
//     see seccomp_linux.go). The helper is undumpable, so the command
//     cannot open its /proc/1/mem or descriptors. A filter or a drop that
//     fails fails the command ([ErrSandboxUnavailable]). Off mode has
//     neither: as root, the command is root.
//   - The view ([View]), in a mount namespace: the daemon's state and
//     socket directories hidden, .git and the launchers read-only, private
//     /tmp, /var/tmp and /dev/shm, a /proc of the command's own PID
//     namespace, and a /dev of null, zero, full, random, urandom and tty
//     only (no disks, which root could read past every rule).
//   - Network off ([Spec.Network] false in a sandboxed mode): Landlock
//     denies TCP bind and connect (ABI 4+, required), UDP (ABI 10+),
//     connecting to abstract unix sockets outside the sandbox (ABI 6+) and
//     to pathname unix sockets (ABI 9+). Below those ABIs Landlock does
//     not cover UDP or unix sockets, and it never covers raw sockets or
//     Multipath TCP; the network namespace (only a loopback, down) covers
//     all of them where it can be made.
//   - Processes: in a PID namespace on Linux 6.14+, the namespace's
//     pid_max holds the command to between MaxProcs and MaxProcs+300
//     tasks, root included. Elsewhere RLIMIT_NPROC, set to MaxProcs more
//     than the user already runs, which the kernel ignores for root.
//   - Output: at most [Spec.OutputLimit] bytes of stdout and stderr
//     together are kept, as heads and tails; the rest is read and dropped.
//   - Environment: exactly [Spec.Env]; the helper itself runs with an
//     empty environment and gets the command on a pipe.
package command

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Mode is how a command is confined.
type Mode string

const (
	// ReadOnly lets the command read and execute everywhere and write
	// nowhere but a few character devices (/dev/null and the like).
	ReadOnly Mode = "read-only"
	// WorkspaceWrite is ReadOnly plus writing under the workspace, the
	// temporary directory and /dev/shm.
	WorkspaceWrite Mode = "workspace-write"
	// Off runs the command without Landlock; the tree kill, the timeout,
	// the output cap and the resource limits still apply (outside Linux,
	// see the package documentation for which).
	Off Mode = "off"
)

// DefaultMaxProcs is the process limit when Spec.MaxProcs is 0.
const DefaultMaxProcs = 512

// ErrSandboxUnavailable means the confinement a mode asks for cannot be
// enforced here; the command was not run.
var ErrSandboxUnavailable = errors.New("command sandbox unavailable")

// Spec is a command to run and the limits it runs under.
type Spec struct {
	// Argv is the program and its arguments; a program name without a
	// slash (or, on Windows, a backslash or colon) is looked up in the
	// PATH of Env (with its PATHEXT on Windows, where a batch file is
	// refused: cmd.exe would parse its arguments again). Exactly one of
	// Argv or Shell is set.
	Argv []string
	// Shell is a script run by /bin/sh -c, or on Windows by
	// cmd.exe /d /s /c.
	Shell string
	// Dir is the absolute working directory; the caller has confined it
	// to the workspace.
	Dir string
	// Env is the command's whole environment, KEY=VALUE; nothing else
	// is inherited.
	Env []string
	// Timeout is how long the command may run before its tree is killed;
	// it must be > 0.
	Timeout time.Duration
	// OutputLimit is how many bytes of stdout and stderr together are
	// kept; beyond it, the head and the tail of each are kept.
	OutputLimit int
	Mode        Mode
	// Workspace is the absolute workspace root, writable in
	// WorkspaceWrite mode.
	Workspace string
	// Network allows network access in ReadOnly and WorkspaceWrite mode;
	// false denies what Landlock and a network namespace can deny (see
	// the package documentation). It is ignored in Off mode.
	Network bool
	// MaxProcs bounds how many processes and threads the command may
	// have; 0 means DefaultMaxProcs. See the package documentation for
	// how, and where it cannot be enforced.
	MaxProcs int
	// Stdin, when not nil, is what the command reads on its standard
	// input (written in the background until the timeout; a command that
	// does not read it all is not held up); nil gives it /dev/null.
	Stdin []byte
	// View, in ReadOnly and WorkspaceWrite mode, is the file system the
	// command sees (hidden state, read-only files, private temporary
	// directories and /proc); nil leaves it as it is. Ignored in Off mode.
	View *View
}

// Result is how a command that ran ended.
type Result struct {
	// ExitCode is the command's exit status, or -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended the command ("killed",
	// "terminated", ...); empty when it exited.
	Signal string
	Stdout string
	Stderr string
	// Truncated is set when the output went over the limit: Stdout and
	// Stderr then hold their head, "\n…[N bytes omitted]…\n" and their
	// tail.
	Truncated bool
	// TimedOut is set when the timeout killed the command.
	TimedOut bool
	// Cancelled is set when the context was done before the command
	// ended, and the command was killed for it.
	Cancelled bool
	Duration  time.Duration
}

func (s *Spec) validate() error {
	switch {
	case len(s.Argv) > 0 && s.Shell != "":
		return errors.New("command: both argv and shell are set")
	case len(s.Argv) == 0 && s.Shell == "":
		return errors.New("command: neither argv nor shell is set")
	case len(s.Argv) > 0 && s.Argv[0] == "":
		return errors.New("command: empty program name")
	case !filepath.IsAbs(s.Dir):
		return fmt.Errorf("command: working directory %q is not absolute", s.Dir)
	case s.Timeout <= 0:
		return fmt.Errorf("command: timeout %v is not positive", s.Timeout)
	case s.OutputLimit <= 0:
		return fmt.Errorf("command: output limit %d is not positive", s.OutputLimit)
	case s.MaxProcs < 0:
		return fmt.Errorf("command: process limit %d is negative", s.MaxProcs)
	}
	switch s.Mode {
	case Off, ReadOnly:
	case WorkspaceWrite:
		if !filepath.IsAbs(s.Workspace) {
			return fmt.Errorf("command: workspace %q is not absolute", s.Workspace)
		}
	default:
		return fmt.Errorf("command: unknown sandbox mode %q", s.Mode)
	}
	if s.View != nil && s.Mode != Off {
		if s.Mode == ReadOnly && !filepath.IsAbs(s.Workspace) {
			return fmt.Errorf("command: a view needs the absolute workspace, not %q", s.Workspace)
		}
		if err := s.View.validate(); err != nil {
			return err
		}
	}
	for _, a := range slices.Concat(s.Argv, []string{s.Shell, s.Dir, s.Workspace}) {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("command: %q contains a NUL byte", a)
		}
	}
	for _, kv := range s.Env {
		if !validEnv(kv) {
			return fmt.Errorf("command: environment entry %q is not KEY=VALUE", kv)
		}
	}
	return nil
}

func validEnv(kv string) bool {
	return strings.IndexByte(kv, '=') > 0 && !strings.ContainsRune(kv, 0)
}

func (s *Spec) maxProcs() int {
	if s.MaxProcs == 0 {
		return DefaultMaxProcs
	}
	return s.MaxProcs
}
