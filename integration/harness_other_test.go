//go:build !linux

package integration

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }

// checkPortsOwned checks nothing outside Linux, which has no /proc to tell
// which process listens on a port; checkPortsFree still runs before every
// start.
func checkPortsOwned(pid int, ports ...int) error { return nil }

// openFileLimit is this process's limit of open files and its hard limit.
func openFileLimit() (soft, hard uint64, err error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, 0, err
	}
	return l.Cur, l.Max, nil
}
