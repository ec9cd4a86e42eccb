package command

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/windows"
)

// plainCommand is the command of spec. A shell script runs as
// cmd.exe /d /s /c "SCRIPT", as Node's child_process does with a shell on
// Windows: cmd.exe is always there and starts in milliseconds (PowerShell
// takes most of a second and may be held back by an execution policy);
// /d skips the AutoRun commands of the registry, and /s with the quotes
// hands cmd.exe the script as it was written. An argv's program is found
// in the PATH of the command's own environment, with its PATHEXT.
func plainCommand(spec *Spec) (*exec.Cmd, error) {
	env := spec.Env
	if env == nil {
		env = []string{} // exactly the spec's (and SYSTEMROOT, which os/exec adds)
	}
	if spec.Shell != "" {
		sysdir, err := windows.GetSystemDirectory()
		if err != nil {
			return nil, fmt.Errorf("finding cmd.exe: %w", err)
		}
		shell := filepath.Join(sysdir, "cmd.exe")
		return &exec.Cmd{
			Path: shell, Args: []string{shell, "/d", "/s", "/c", spec.Shell}, Env: env, Dir: spec.Dir,
			SysProcAttr: &syscall.SysProcAttr{CmdLine: syscall.EscapeArg(shell) + ` /d /s /c "` + spec.Shell + `"`},
		}, nil
	}
	path, err := lookPathIn(spec.Dir, spec.Argv[0], spec.Env)
	if err != nil {
		return nil, err
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".bat" || ext == ".cmd" {
		// CreateProcess would run it with cmd.exe, which reads the
		// arguments as a command line of its own: what runs would not be
		// the argv that was asked about.
		return nil, fmt.Errorf("%s is a batch file, which cmd.exe would run with its arguments parsed again as a command line: run it as a command line instead", path)
	}
	return &exec.Cmd{Path: path, Args: spec.Argv, Env: env, Dir: spec.Dir}, nil
}

// exitOf is how the process of st ended: its exit code; or, when the
// tree was killed for a timeout or a cancellation (killed), -1 and
// "killed", as Windows has no signals to tell it by.
func exitOf(st *os.ProcessState, killed bool) (code int, signal string, byItself bool) {
	if killed {
		return -1, "killed", false
	}
	return st.ExitCode(), "", true
}
