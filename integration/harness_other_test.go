//go:build !linux

package integration

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
