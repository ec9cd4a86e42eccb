package command

import (
	"errors"
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

const (
	// minFSABI is the lowest Landlock ABI the sandboxed modes accept:
	// ABI 3 is the first to restrict truncate(2), without which a
	// read-only command could still empty any file.
	minFSABI = 3
	// minNetABI is the lowest Landlock ABI that restricts TCP.
	minNetABI = 4
	// maxLibABI is the highest ABI go-landlock v0.11 knows.
	maxLibABI = 11
)

// kernelABI returns the Landlock ABI version of the running kernel.
func kernelABI() (int, error) {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Errorf("landlock is not supported by the kernel or not enabled at boot: %w", err)
	}
	return v, nil
}

// sandboxABI returns the Landlock ABI to enforce spec's mode with, given
// the kernel's ABI (or the error getting it): 0 for Off, else the highest
// version both the kernel and go-landlock know. It fails with
// ErrSandboxUnavailable when the mode cannot be enforced.
func sandboxABI(mode Mode, network bool, kernel int, kernelErr error) (int, error) {
	if mode == Off {
		return 0, nil
	}
	if kernelErr != nil {
		return 0, fmt.Errorf("%w: mode %s: %v", ErrSandboxUnavailable, mode, kernelErr)
	}
	if kernel < minFSABI {
		return 0, fmt.Errorf("%w: mode %s needs Landlock ABI %d or later, the kernel has ABI %d",
			ErrSandboxUnavailable, mode, minFSABI, kernel)
	}
	if !network && kernel < minNetABI {
		return 0, fmt.Errorf("%w: mode %s without network needs Landlock ABI %d or later, the kernel has ABI %d",
			ErrSandboxUnavailable, mode, minNetABI, kernel)
	}
	return min(kernel, maxLibABI), nil
}

// abiConfig is go-landlock's strict configuration for ABI version v.
func abiConfig(v int) (landlock.Config, error) {
	switch v {
	case 1:
		return landlock.V1, nil
	case 2:
		return landlock.V2, nil
	case 3:
		return landlock.V3, nil
	case 4:
		return landlock.V4, nil
	case 5:
		return landlock.V5, nil
	case 6:
		return landlock.V6, nil
	case 7:
		return landlock.V7, nil
	case 8:
		return landlock.V8, nil
	case 9:
		return landlock.V9, nil
	case 10:
		return landlock.V10, nil
	case 11:
		return landlock.V11, nil
	}
	return landlock.Config{}, fmt.Errorf("no Landlock configuration for ABI %d", v)
}

// Groups of filesystem access rights, as go-landlock's RODirs, RWDirs
// and RWFiles grant them.
const (
	accessRead  = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
	accessWrite = llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile |
		llsys.AccessFSMakeChar | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock |
		llsys.AccessFSMakeFifo | llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym | llsys.AccessFSTruncate
	accessFile = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile | llsys.AccessFSTruncate
)

// pathRule grants access beneath paths.
type pathRule struct {
	paths  []string
	access uint64
	// optional paths may be missing.
	optional bool
}

// restrict confines the calling thread, and every process it forks
// afterwards, for the spec's mode: Landlock at exactly the spec's ABI (a
// kernel below it makes this fail rather than enforce less), and
// no_new_privs.
//
// Only the calling thread is restricted, on purpose: the helper forks the
// command from this thread (HelperMain locks it), and the command inherits
// the thread's Landlock domain. go-landlock's Restrict* restrict every
// thread, which below ABI 8 goes through libpsx, which finds the threads
// in /proc/<getpid()>/task; inside a PID namespace with the daemon's /proc
// that is another process's directory, and it waits forever.
func restrict(s *helperSpec) error {
	if s.Mode == Off {
		return nil
	}
	if s.ABI < minFSABI || (!s.Network && s.ABI < minNetABI) {
		return fmt.Errorf("landlock ABI %d cannot enforce mode %s (network %v)", s.ABI, s.Mode, s.Network)
	}
	if kernel, err := kernelABI(); err != nil {
		return err
	} else if kernel < s.ABI {
		return fmt.Errorf("landlock ABI %d wanted, the kernel has ABI %d", s.ABI, kernel)
	}
	base, err := abiConfig(s.ABI)
	if err != nil {
		return err
	}
	// Signals may not reach processes outside the sandbox. Without
	// network, neither may TCP (and UDP from ABI 10) nor abstract unix
	// sockets.
	attr := llsys.RulesetAttr{HandledAccessFS: uint64(base.HandledAccessFS)}
	scoped := uint64(llsys.ScopeSignal)
	if !s.Network {
		attr.HandledAccessNet = uint64(base.HandledAccessNet)
		scoped |= llsys.ScopeAbstractUnixSocket
	}
	attr.Scoped = uint64(base.Scoped) & scoped

	everywhere := uint64(accessRead)
	if s.Network {
		// From ABI 9, connecting to a pathname unix socket needs a right
		// of its own; here it is part of the network.
		everywhere |= llsys.AccessFSResolveUnix
	}
	rules := []pathRule{
		{paths: []string{"/"}, access: everywhere},
		// Character devices any command may read, write and ioctl.
		// /dev/tty only reaches the command's own controlling terminal,
		// and the helper starts in a new session without one.
		{
			paths:    []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"},
			access:   accessFile | llsys.AccessFSIoctlDev,
			optional: true,
		},
	}
	if s.Mode == WorkspaceWrite {
		rw := uint64(accessRead | accessWrite | llsys.AccessFSRefer)
		rules = append(rules,
			pathRule{paths: append([]string{s.Workspace}, s.Writable...), access: rw},
			pathRule{paths: []string{s.TempDir, "/dev/shm"}, access: rw, optional: true},
		)
	}

	fd, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	defer unix.Close(fd)
	for _, r := range rules {
		for _, p := range r.paths {
			if err := addPathRule(fd, p, r.access&attr.HandledAccessFS); err != nil {
				if r.optional && errors.Is(err, unix.ENOENT) {
					continue
				}
				return err
			}
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

func addPathRule(rulesetFD int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock rule for %s: %w", path, err)
	}
	defer unix.Close(fd)
	err = llsys.LandlockAddPathBeneathRule(rulesetFD, &llsys.PathBeneathAttr{AllowedAccess: access, ParentFd: fd}, 0)
	if err != nil {
		return fmt.Errorf("landlock rule for %s: landlock_add_rule: %w", path, err)
	}
	return nil
}

// confine does what restrict leaves for last, in a sandboxed mode: it
// makes the helper undumpable, so that the command, which runs as the
// helper's uid, cannot open the helper's /proc/1/mem or descriptors (the
// helper's other threads keep their capabilities and have no filter);
// installs the seccomp filter (installFilter); and drops every capability
// (dropCapabilities). Whatever the daemon's uid, the command then holds no
// capability, cannot reopen files by handle past the mount view, and can
// neither mount nor make namespaces.
func confine(s *helperSpec) error {
	if s.Mode == Off {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	if err := installFilter(); err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	return nil
}
