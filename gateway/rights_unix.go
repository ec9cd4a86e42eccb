//go:build unix

package gateway

import (
	"os"
	"syscall"
)

// errNoFiles is nil: unix sockets pass descriptors (SCM_RIGHTS).
var errNoFiles error

// oobSpace is room for the two descriptors of a handshake.
var oobSpace = syscall.CmsgSpace(2 * 4)

// filesOf returns the file descriptors of the SCM_RIGHTS messages of oob,
// as files, set non-blocking so that closing them ends a pending read.
func filesOf(oob []byte) ([]*os.File, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			return files, err
		}
		for _, fd := range fds {
			syscall.CloseOnExec(fd)
			if err := syscall.SetNonblock(fd, true); err != nil {
				syscall.Close(fd)
				continue
			}
			files = append(files, os.NewFile(uintptr(fd), "mcp-client"))
		}
	}
	return files, nil
}

// unixRights is the SCM_RIGHTS message that passes in and out.
func unixRights(in, out *os.File) ([]byte, error) {
	// Not File.Fd, which would make the files blocking.
	var fds [2]int
	for i, f := range []*os.File{in, out} {
		rc, err := f.SyscallConn()
		if err != nil {
			return nil, err
		}
		if err := rc.Control(func(fd uintptr) { fds[i] = int(fd) }); err != nil {
			return nil, err
		}
	}
	return syscall.UnixRights(fds[0], fds[1]), nil
}
