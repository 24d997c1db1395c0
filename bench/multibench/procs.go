//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Bounds of a gatehouse process's life.
const (
	startTimeout = 60 * time.Second // until it serves
	stopTimeout  = 15 * time.Second // after SIGTERM, then SIGKILL
)

// proc is a gatehouse process serving one Caddyfile.
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

// startGatehouse runs `gatehouse run --config <caddyfile>` in dir (its own
// data directory dir/data) with env added, its output into dir/<name>.log,
// and returns once base answers the discovery document.
func startGatehouse(name, dir, bin, caddyfile, base string, env []string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own copy
	cmd := exec.Command(bin, "run", "--config", caddyfile)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dir, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config")), env...)
	// A process group of its own, so that Ctrl-C reaches only multibench,
	// which stops it; killed by the kernel should multibench die first.
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
	probe := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := probe.Get(base + "/.well-known/openid-configuration")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
			err = errors.New(resp.Status)
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
}

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

// freePort returns a loopback port that nothing listened on a moment ago
// and that this run has not handed out before.
func freePort() (int, error) {
	handed.Lock()
	defer handed.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("reserving a port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handed.ports[port] {
			handed.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("reserving a port: every port offered was handed out before")
}

var handed = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

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
