//go:build unix

package command

import (
	"os"
	"os/exec"
	"syscall"
)

// plainCommand is the command of spec, its program found in the PATH of
// its own environment (a relative one in its working directory).
func plainCommand(spec *Spec) (*exec.Cmd, error) {
	argv := spec.argv()
	path, err := lookPathIn(spec.Dir, argv[0], spec.Env)
	if err != nil {
		return nil, err
	}
	env := spec.Env
	if env == nil {
		env = []string{} // exactly the spec's: not the daemon's
	}
	return &exec.Cmd{Path: path, Args: argv, Env: env, Dir: spec.Dir}, nil
}

// exitOf is how the process of st ended: its exit code, or -1 and the
// signal's name; byItself when it exited rather than being killed.
func exitOf(st *os.ProcessState, _ bool) (code int, signal string, byItself bool) {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return -1, ws.Signal().String(), false
	}
	return st.ExitCode(), "", true
}
