//go:build !linux

package workspace

import "testing"

// inotifyFDs is Linux's; elsewhere there is nothing to tell apart.
func inotifyFDs(*testing.T) map[string]bool { return nil }

// checkKernelWatches reads inotify's list of watches on Linux only.
func checkKernelWatches(*testing.T, map[string]bool, string, ...string) {}
