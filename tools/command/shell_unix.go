//go:build unix

package command

// argv is the spec's program and arguments: a shell script runs as
// /bin/sh -c SCRIPT.
func (s *Spec) argv() []string {
	if s.Shell != "" {
		return []string{"/bin/sh", "-c", s.Shell}
	}
	return s.Argv
}
