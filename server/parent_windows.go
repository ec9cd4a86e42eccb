package server

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/windows"
)

// waitExit waits until pid exits (true) or ctx ends (false): on the
// process's handle (WaitForSingleObject, in slices so that it can see ctx
// end), else, when the process may not be opened for that, polling every
// interval.
func waitExit(ctx context.Context, pid int, interval time.Duration) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
			return pollExit(ctx, pid, interval)
		}
		return true // no such process
	}
	defer windows.CloseHandle(h)
	for ctx.Err() == nil {
		ev, err := windows.WaitForSingleObject(h, 200)
		if err != nil {
			return false
		}
		if ev == windows.WAIT_OBJECT_0 {
			return true
		}
	}
	return false
}
