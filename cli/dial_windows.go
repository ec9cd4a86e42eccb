package cli

import "golang.org/x/sys/windows"

// noListener are the errors of dialing a unix socket that no daemon
// listens on: a stale socket file, or none.
var noListener = []error{windows.WSAECONNREFUSED, windows.ERROR_FILE_NOT_FOUND, windows.ERROR_PATH_NOT_FOUND}
