//go:build !linux

package integration

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }

// checkPortsOwned checks nothing outside Linux, which has no /proc to tell
// which process listens on a port; checkPortsFree still runs before every
// start.
func checkPortsOwned(pid int, ports ...int) error { return nil }
