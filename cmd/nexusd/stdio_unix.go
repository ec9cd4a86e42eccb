//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/nexuscocreate/nexus/daemon"
)

// stdioConn takes stdin and stdout for the protocol. Standard output is
// moved to a descriptor of its own and fd 1 is pointed at stderr, so that
// nothing else (a library, a child process, a panic) can ever write into
// the protocol stream. Both ends are made non-blocking so that closing
// them ends a pending read.
func stdioConn() (*daemon.Stdio, func(), error) {
	outFD, err := unix.Dup(1)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.Dup2(2, 1); err != nil {
		return nil, nil, err
	}
	unix.CloseOnExec(outFD)
	for _, fd := range []int{0, outFD} {
		if err := unix.SetNonblock(fd, true); err != nil {
			return nil, nil, err
		}
	}
	in := os.NewFile(0, "stdin")
	out := os.NewFile(uintptr(outFD), "protocol")
	restore := func() { unix.SetNonblock(0, false) } // a terminal shared with a shell stays usable
	return &daemon.Stdio{In: in, Out: out, Close: func() error {
		in.Close()
		return out.Close()
	}}, restore, nil
}
