package mcp

import (
	"fmt"
	"os"
)

// describeExit says how a stdio server's process ended: Windows has no
// signals, only exit codes (a killed server's is 1).
func describeExit(st *os.ProcessState) string {
	return fmt.Sprintf("exited with code %d", st.ExitCode())
}
