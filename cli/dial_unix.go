//go:build unix

package cli

import "syscall"

// noListener are the errors of dialing a unix socket that no daemon
// listens on: a stale socket file, or none.
var noListener = []error{syscall.ECONNREFUSED, syscall.ENOENT}
