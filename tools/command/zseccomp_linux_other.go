//go:build linux && !amd64 && !arm64

package command

import "golang.org/x/sys/unix"

// commandFilter is empty where no filter is generated: the sandboxed modes
// then fail closed (installFilter).
var commandFilter []unix.SockFilter
