//go:build unix && !linux

package server

import (
	"context"
	"time"

	"github.com/nexuscocreate/nexus/internal/proctree"
)

// waitExit waits until pid exits (true) or ctx ends (false), polling
// every interval: only Linux has a descriptor to wait on.
func waitExit(ctx context.Context, pid int, interval time.Duration) bool {
	if !proctree.Exists(pid) {
		return true
	}
	return pollExit(ctx, pid, interval)
}
