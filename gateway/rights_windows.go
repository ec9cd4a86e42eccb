package gateway

import (
	"fmt"
	"os"
	"runtime"
)

// errNoFiles says why no descriptors pass: Windows's unix sockets have no
// SCM_RIGHTS.
var errNoFiles = fmt.Errorf("%w on %s/%s", ErrNoFilePassing, runtime.GOOS, runtime.GOARCH)

// oobSpace is 0: nothing comes beside the bytes.
const oobSpace = 0

// filesOf fails: no descriptors come on Windows.
func filesOf([]byte) ([]*os.File, error) { return nil, errNoFiles }

// unixRights fails: no descriptors pass on Windows.
func unixRights(_, _ *os.File) ([]byte, error) { return nil, errNoFiles }
