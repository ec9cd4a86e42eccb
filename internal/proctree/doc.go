// Package proctree starts a process as the root of a tree that is stopped
// as a whole: the process and every descendant it starts. Start with
// [Start].
//
// On unix the tree is a process group of its own (a child that calls
// setsid or setpgid leaves it). On Linux the root also gets SIGKILL when
// the process that started it dies (Pdeathsig); elsewhere on unix there is
// no such thing, and a root whose parent is gone runs on until it ends by
// itself (a child reading its stdin from the parent sees end of file).
//
// On Windows the tree is a Job Object that kills every process in it when
// its last handle closes: when [Tree.Release] is called, or when the
// process holding the handle dies, however it dies. The root is started
// suspended and assigned to the job before it runs, so that nothing it
// starts escapes the job.
package proctree

import "errors"

// Options configures a tree.
type Options struct {
	// MaxProcesses, when > 0, bounds how many processes the tree holds
	// at once; starting another fails. Only Windows enforces it (the
	// job's active process limit): on unix the root bounds its tree its
	// own way (RLIMIT_NPROC) or not at all.
	MaxProcesses int
}

// ErrNoTerminate is returned by [Tree.Terminate] where a tree cannot be
// asked to end, only killed.
var ErrNoTerminate = errors.New("proctree: the platform has no way to ask a process tree to end, only to kill it")
