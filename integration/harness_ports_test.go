package integration

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
)

// Ports. Every gatehouse gets loopback ports of its own (HTTP, admin and
// the demo backend's) while tests run in parallel, here and in other test
// processes on the machine. Caddy listens with SO_REUSEPORT, so a gatehouse
// started on a port that another Caddy of the same user listens on starts
// without error and shares the port: requests would reach either. Hence:
//
//   - reservePort hands out only ports nothing listened on at the time,
//     and never the same port twice in one test process;
//   - before each start, checkPortsFree binds every port of the process
//     (without SO_REUSEPORT, so any listener makes it fail);
//   - once the process serves, checkPortsOwned makes sure every listener on
//     its ports belongs to its pid (on Linux, from /proc);
//   - a first start that loses a port to another process tries new ports
//     (StartGatehouseWith, up to startAttempts).

// errPortBusy says that another process holds or took a gatehouse's port.
var errPortBusy = errors.New("port taken by another process")

// maxPortPicks bounds the loop of reservePort.
const maxPortPicks = 100

// reserved is every port reservePort has handed out in this test process.
var reserved = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// reservePort returns a loopback TCP port that nothing listened on at the
// time of the call and that this test process has not handed out before.
func reservePort(t testing.TB) int {
	t.Helper()
	reserved.Lock()
	defer reserved.Unlock()
	// Listeners stay open until the loop ends, so the kernel does not offer
	// the same port twice.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range maxPortPicks {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("reserving a port: %v", err)
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if !reserved.ports[port] {
			reserved.ports[port] = true
			return port
		}
	}
	t.Fatalf("reserving a port: every one of %d ports the kernel offered was handed out already", maxPortPicks)
	return 0
}

// checkPortsFree fails with errPortBusy when anything listens on one of
// ports on 127.0.0.1 (or on every interface).
func checkPortsFree(ports ...int) error {
	for _, port := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return fmt.Errorf("%w: 127.0.0.1:%d is in use: %v", errPortBusy, port, err)
		}
		if err := l.Close(); err != nil {
			return fmt.Errorf("closing the check of 127.0.0.1:%d: %w", port, err)
		}
	}
	return nil
}
