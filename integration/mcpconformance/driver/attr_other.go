//go:build !linux

package main

import "syscall"

// daemonAttr is nothing: only Linux signals a child when its parent dies,
// and the driver stops nexusd itself when it ends normally.
func daemonAttr() *syscall.SysProcAttr { return nil }
