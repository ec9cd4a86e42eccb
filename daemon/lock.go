package daemon

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// workspaceLock is an exclusive flock on .nexus/run/lock that holds the pid
// of its owner. The kernel releases it when the process dies, so a crash
// never leaves the workspace locked.
type workspaceLock struct{ f *os.File }

func acquireLock(path string) (*workspaceLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("workspace lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		data, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(data))
			if _, perr := strconv.Atoi(pid); perr != nil {
				pid = "unknown"
			}
			return nil, lockedError(fmt.Sprintf("another nexusd (pid %s) is already running for this workspace (lock %s)", pid, path))
		}
		return nil, fmt.Errorf("workspace lock: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &workspaceLock{f}, nil
}

func (l *workspaceLock) release() {
	l.f.Truncate(0)
	unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
}

// ErrLocked is the error of Open when another daemon holds the
// workspace's lock (errors.Is).
var ErrLocked = errors.New("the workspace is locked by another nexusd")

type lockedError string

func (e lockedError) Error() string        { return string(e) }
func (e lockedError) Is(target error) bool { return target == ErrLocked }
