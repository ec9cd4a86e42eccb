package daemon

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset is where the locked byte lies: far past the pid the file
// holds, since Windows locks are mandatory and a locked range cannot be
// read (the pid must stay readable for the message of the second daemon).
const lockOffset = 1 << 62

func lockOverlapped() *windows.Overlapped {
	return &windows.Overlapped{Offset: uint32(lockOffset & 0xffffffff), OffsetHigh: uint32(lockOffset >> 32)}
}

// lockFile takes an exclusive LockFileEx lock on one byte of f without
// waiting; errHeld when another process has it.
func lockFile(f *os.File) error {
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, lockOverlapped())
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errHeld
	}
	return err
}

func unlockFile(f *os.File) { windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, lockOverlapped()) }
