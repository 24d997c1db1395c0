//go:build !linux

// Command wsbench measures the message gateway at the process level; it
// reads /proc and runs on Linux only. See main.go and bench/README.md.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "wsbench: Linux only (it reads the servers' CPU and memory from /proc)")
	os.Exit(2)
}
