//go:build unix

package proctree

import (
	"fmt"
	"os/exec"
	"syscall"
)

// Tree is a started process and its descendants: on unix, a process group
// whose ID is the root's PID.
type Tree struct {
	pgid int
}

// Start starts cmd as the root of a new tree, in a process group of its
// own. The other fields of cmd.SysProcAttr are kept. opts.MaxProcesses is
// not enforced on unix (see [Options]).
func Start(cmd *exec.Cmd, opts Options) (*Tree, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	dieWithParent(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Tree{pgid: cmd.Process.Pid}, nil
}

// Terminate asks every process of the tree to end: SIGTERM to the group.
func (t *Tree) Terminate() error { return t.signal(syscall.SIGTERM) }

// Kill kills every process of the tree: SIGKILL to the group.
func (t *Tree) Kill() error { return t.signal(syscall.SIGKILL) }

func (t *Tree) signal(sig syscall.Signal) error {
	if err := syscall.Kill(-t.pgid, sig); err != nil && err != syscall.ESRCH {
		return fmt.Errorf("proctree: signalling process group %d: %w", t.pgid, err)
	}
	return nil
}

// Release frees what the tree holds. On unix it holds nothing: what is
// left of the group runs on.
func (t *Tree) Release() {}

// Exists reports whether a process pid exists: one of another user does
// (signalling it is refused, not failed), a zombie does until reaped.
func Exists(pid int) bool {
	return syscall.Kill(pid, 0) != syscall.ESRCH
}
