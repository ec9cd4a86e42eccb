//go:build unix

package command

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processRunning reports whether pid is a process that has not exited. A
// zombie has: on Linux its state in /proc says so (a container's init may
// not reap it soon); elsewhere it is reaped by launchd at once.
func processRunning(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) STATE ...
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
