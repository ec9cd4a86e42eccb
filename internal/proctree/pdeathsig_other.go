//go:build unix && !linux

package proctree

import "syscall"

// dieWithParent does nothing: only Linux can have the kernel signal a
// child when its parent dies (see the package documentation for what
// happens instead).
func dieWithParent(*syscall.SysProcAttr) {}
