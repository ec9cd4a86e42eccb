package daemon

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// workspaceLock is an exclusive lock on .nexus/run/lock, a file that holds
// the pid of its owner: flock on unix, LockFileEx on Windows
// (lock_unix.go, lock_windows.go). The system releases it when the process
// dies, so a crash never leaves the workspace locked.
type workspaceLock struct{ f *os.File }

func acquireLock(path string) (*workspaceLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("workspace lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		data, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, errHeld) {
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
	unlockFile(l.f)
	l.f.Close()
}

// errHeld is lockFile's error when another process holds the lock.
var errHeld = errors.New("held by another process")

// ErrLocked is the error of Open when another daemon holds the
// workspace's lock (errors.Is).
var ErrLocked = errors.New("the workspace is locked by another nexusd")

type lockedError string

func (e lockedError) Error() string        { return string(e) }
func (e lockedError) Is(target error) bool { return target == ErrLocked }
