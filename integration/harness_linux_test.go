package integration

import "syscall"

// sysProcAttr makes the kernel kill gatehouse if this test process dies
// first (a panic, a -timeout), so no server outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
