//go:build !unix

package checkpoints

// nonblock: opening a file blocks on nothing outside unix.
const nonblock = 0
