package main

import "syscall"

// daemonAttr has nexusd get SIGTERM when the driver dies.
func daemonAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} }
