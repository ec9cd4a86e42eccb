//go:build !linux

package command

import (
	"fmt"
	"os"
	"runtime"
)

// HelperMain refuses: the command helper is Linux's sandbox, and outside
// Linux no command runs through it. It returns 126, the code of a command
// that could not be run.
func HelperMain([]string) int {
	fmt.Fprintf(os.Stderr, "nexus: the command sandbox helper runs on Linux only, not on %s/%s\n", runtime.GOOS, runtime.GOARCH)
	return 126
}
