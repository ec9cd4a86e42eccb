//go:build unix

package checkpoints

import "syscall"

// nonblock opens a file without blocking on a fifo that replaced it.
const nonblock = syscall.O_NONBLOCK
