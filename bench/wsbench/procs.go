//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bounds of a child process's life.
const (
	startTimeout = 60 * time.Second // until it serves
	stopTimeout  = 15 * time.Second // after SIGTERM, then SIGKILL
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// proc is a server the benchmark started: the backend, or the gatehouse
// binary serving one Caddyfile.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string        // its stdout and stderr
	done chan struct{} // closed when it has exited
}

// running are the processes started and not yet stopped, so that stopAll
// (at the end, on an error, on Ctrl-C) stops each by its pid.
var running = struct {
	sync.Mutex
	procs map[*proc]bool
}{procs: map[*proc]bool{}}

// startProc starts bin with args in dir, its output into dir/<name>.log,
// after checking that ports are free, and returns once ready reports no
// error; then it checks that every listener on ports is its own.
func startProc(name, dir, bin string, args []string, ports []int, ready func() error) (*proc, error) {
	if err := checkPortsFree(ports...); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own copy
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Caddy's data and config directories (the gatehouse store among them)
	// inside dir, never the user's.
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	// A process group of its own, so that Ctrl-C reaches only wsbench,
	// which stops it; and killed by the kernel should wsbench die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	running.Lock()
	if err := cmd.Start(); err != nil {
		running.Unlock()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	running.procs[p] = true
	running.Unlock()
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()

	deadline := time.Now().Add(startTimeout)
	for {
		err := ready()
		if err == nil {
			break
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited while starting (log %s):\n%s", name, logPath, tail(logPath))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s not ready after %v: %w (log %s)", name, startTimeout, err, logPath)
		}
	}
	if err := checkPortsOwned(p.pid(), ports...); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop ends the process by its pid: SIGTERM, then SIGKILL after
// stopTimeout. It returns once the process has exited.
func (p *proc) stop() {
	running.Lock()
	delete(running.procs, p)
	running.Unlock()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(stopTimeout):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stopAll stops every process still running, each by its pid.
func stopAll() {
	running.Lock()
	procs := make([]*proc, 0, len(running.procs))
	for p := range running.procs {
		procs = append(procs, p)
	}
	running.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(p.stop)
	}
	wg.Wait()
}

// cpu is the process's CPU time so far, user and system, all threads
// (/proc/<pid>/stat utime+stime, in 10 ms ticks).
func (p *proc) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	if err != nil {
		return 0, err
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: state is the third field of the line, utime the 14th.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected form", p.pid())
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected form", p.pid())
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", p.pid(), err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// memory is the process's resident set now (VmRSS) and at its peak so far
// (VmHWM), in bytes.
func (p *proc) memory() (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status %s: %w", p.pid(), name, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS or VmHWM", p.pid())
	}
	return rss, hwm, nil
}

// selfCPU is this process's CPU time so far (the load generator's).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// raiseFileLimit raises this process's soft RLIMIT_NOFILE to its hard
// limit, which the servers it starts inherit, and returns that limit.
// Calling Setrlimit explicitly is what makes Go pass the raised limit to
// children (os/exec otherwise restores the limit the process started with).
func raiseFileLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("reading RLIMIT_NOFILE: %w", err)
	}
	l.Cur = l.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("raising RLIMIT_NOFILE to %d: %w", l.Max, err)
	}
	return l.Max, nil
}

// reservePort returns a loopback port that nothing listened on a moment
// ago and that this run has not handed out before.
func reservePort() (int, error) {
	reserved.Lock()
	defer reserved.Unlock()
	var held []net.Listener // held until the end, so no port is offered twice
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("reserving a port: %w", err)
		}
		held = append(held, l)
		if port := l.Addr().(*net.TCPAddr).Port; !reserved.ports[port] {
			reserved.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("reserving a port: every port offered was handed out before")
}

var reserved = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// checkPortsFree fails when anything listens on one of ports on loopback:
// it binds each without SO_REUSEPORT, which Caddy's listeners use.
func checkPortsFree(ports ...int) error {
	for _, port := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return fmt.Errorf("port 127.0.0.1:%d is in use: %w", port, err)
		}
		l.Close()
	}
	return nil
}

// checkPortsOwned fails when a listening socket on one of ports does not
// belong to pid (another server sharing the port with SO_REUSEPORT).
func checkPortsOwned(pid int, ports ...int) error {
	own := map[string]bool{}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing the files of pid %d: %w", pid, err)
	}
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			if inode, ok := strings.CutPrefix(target, "socket:["); ok {
				own[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue // no IPv6
		}
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: listening
				continue
			}
			_, portHex, _ := strings.Cut(f[1], ":")
			port, err := strconv.ParseUint(portHex, 16, 16)
			if err != nil {
				continue
			}
			for _, want := range ports {
				if int(port) == want && !own[f[9]] {
					return fmt.Errorf("another process also listens on port %d of pid %d", want, pid)
				}
			}
		}
	}
	return nil
}

// tail is the end of a log file, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
