package server

import (
	"context"
	"fmt"
	"time"

	"github.com/nexuscocreate/nexus/internal/proctree"
)

// parentGone reports when the editor's process, named by initialize's
// processId, exits. It waits on the process where the platform can (a
// pidfd on Linux, the process handle on Windows) and polls otherwise.
func (s *Server) parentGone(ctx context.Context) <-chan error {
	gone := make(chan error, 1)
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-s.pidSet:
		}
		pid := int(s.watchPID.Load())
		if waitExit(ctx, pid, s.opts.WatchParent) {
			gone <- fmt.Errorf("%w (pid %d)", ErrParentExited, pid)
		}
	}()
	return gone
}

// pollExit polls every interval until pid is gone (true) or ctx ends
// (false).
func pollExit(ctx context.Context, pid int, interval time.Duration) bool {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			if !proctree.Exists(pid) {
				return true
			}
		}
	}
}
