package server

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// parentGone reports when the editor's process, named by initialize's
// processId, exits. It waits on a pidfd where the kernel has them and polls
// otherwise.
func (s *Server) parentGone(ctx context.Context) <-chan error {
	gone := make(chan error, 1)
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-s.pidSet:
		}
		pid := int(s.watchPID.Load())
		if !alive(pid) {
			gone <- fmt.Errorf("%w (pid %d)", ErrParentExited, pid)
			return
		}
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			defer unix.Close(fd)
			if waitPidfd(ctx, fd) {
				gone <- fmt.Errorf("%w (pid %d)", ErrParentExited, pid)
			}
			return
		}
		t := time.NewTicker(s.opts.WatchParent)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !alive(pid) {
					gone <- fmt.Errorf("%w (pid %d)", ErrParentExited, pid)
					return
				}
			}
		}
	}()
	return gone
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

// alive reports whether pid exists (a zombie counts as gone only once
// reaped, which is what an editor's own parent does).
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
