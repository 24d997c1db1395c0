package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr makes the kernel kill gatehouse if this test process dies
// first (a panic, a -timeout), so no server outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// tcpListen is the state of a listening socket in /proc/net/tcp.
const tcpListen = "0A"

// checkPortsOwned fails with errPortBusy when a TCP socket that process
// pid does not hold listens on one of ports (on any address): it compares
// the listening sockets of /proc/net/tcp and /proc/net/tcp6 with the
// sockets of /proc/<pid>/fd.
func checkPortsOwned(pid int, ports ...int) error {
	own, err := socketInodes(pid)
	if err != nil {
		return err
	}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listeners, err := tcpListeners(table)
		if err != nil {
			return err
		}
		for _, port := range ports {
			for _, inode := range listeners[port] {
				if !own[inode] {
					return fmt.Errorf("%w: another process (socket inode %s) also listens on port %d of gatehouse pid %d", errPortBusy, inode, port, pid)
				}
			}
		}
	}
	return nil
}

// tcpListeners reads a /proc/net/tcp table and returns the inodes of the
// listening sockets by port. A missing table (no IPv6) has none.
func tcpListeners(table string) (map[int][]string, error) {
	b, err := os.ReadFile(table)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	listeners := map[int][]string{}
	lines := strings.Split(string(b), "\n")
	for _, line := range lines[1:] { // after the header
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
		fields := strings.Fields(line)
		if len(fields) < 10 || fields[3] != tcpListen {
			continue
		}
		_, portHex, _ := strings.Cut(fields[1], ":")
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("%s: local address %q: %w", table, fields[1], err)
		}
		listeners[int(port)] = append(listeners[int(port)], fields[9])
	}
	return listeners, nil
}

// socketInodes returns the inodes of the sockets process pid holds.
func socketInodes(pid int) (map[string]bool, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing the files of gatehouse pid %d: %w", pid, err)
	}
	inodes := map[string]bool{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed since ReadDir
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return inodes, nil
}

// openFileLimit is this process's limit of open files (RLIMIT_NOFILE's
// soft limit, which Go raises to the hard one at start), and the hard
// limit, which the gatehouse processes it starts raise theirs to.
func openFileLimit() (soft, hard uint64, err error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, 0, err
	}
	return l.Cur, l.Max, nil
}
