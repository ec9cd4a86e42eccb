package core

import (
	"bytes"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fdPath asks the kernel for the path of an open file (fcntl F_GETPATH).
func fdPath(f *os.File) (string, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", err
	}
	buf := make([]byte, unix.PathMax)
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		_, ferr = unix.FcntlInt(fd, unix.F_GETPATH, int(uintptr(unsafe.Pointer(&buf[0]))))
	}); err != nil {
		return "", err
	}
	runtime.KeepAlive(buf)
	if ferr != nil {
		return "", &os.PathError{Op: "fcntl F_GETPATH", Path: f.Name(), Err: ferr}
	}
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		buf = buf[:i]
	}
	return string(buf), nil
}
