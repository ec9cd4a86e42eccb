package command

import "github.com/nexuscocreate/nexus/internal/proctree"

// processRunning reports whether pid is a process that has not exited.
func processRunning(pid int) bool { return proctree.Exists(pid) }
