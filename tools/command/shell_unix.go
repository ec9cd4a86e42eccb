//go:build unix

package command

// Shell is how a command line runs here, in words for a tool's
// description and a prompt.
const Shell = "/bin/sh -c"

// ShellArgv is the program and arguments that run script as a command line
// here: /bin/sh -c SCRIPT.
func ShellArgv(script string) []string { return []string{"/bin/sh", "-c", script} }

// argv is the spec's program and arguments: a shell script runs as
// /bin/sh -c SCRIPT.
func (s *Spec) argv() []string {
	if s.Shell != "" {
		return ShellArgv(s.Shell)
	}
	return s.Argv
}
