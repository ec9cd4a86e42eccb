package redistest

import "os"

// Windows has no signal to pause or continue a process (nil: Pause says
// so), and none to ask it to stop: Stop kills.
var (
	sigStop os.Signal
	sigCont os.Signal
	sigTerm = os.Kill
)
