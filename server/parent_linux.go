package server

import (
	"context"
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nexuscocreate/nexus/internal/proctree"
)

// waitExit waits until pid exits (true) or ctx ends (false): on a pidfd
// where the kernel has them, else polling every interval.
func waitExit(ctx context.Context, pid int, interval time.Duration) bool {
	if !proctree.Exists(pid) {
		return true
	}
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		defer unix.Close(fd)
		return waitPidfd(ctx, fd)
	}
	return pollExit(ctx, pid, interval)
}

// waitPidfd waits until the process of fd exits (true) or ctx ends
// (false). It polls in slices so that it can see ctx end.
func waitPidfd(ctx context.Context, fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for ctx.Err() == nil {
		n, err := unix.Poll(fds, 200)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return false
		}
		if n > 0 {
			return true
		}
	}
	return false
}
