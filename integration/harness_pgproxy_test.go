package integration

import (
	"io"
	"net"
	"sync"
	"testing"
)

// faultProxy is a TCP proxy on loopback between gatehouse processes and a
// PostgreSQL server, for the fault tests: it passes bytes both ways;
// swallow makes every connection's server-to-client bytes disappear (the
// statements in flight reach the server, which runs and commits them,
// and their answers are lost: the commit outcome unknown to gatehouse);
// cut closes every connection and refuses new ones; restore passes again,
// to a target that may have moved (a restarted server listens on another
// port).
type faultProxy struct {
	ln net.Listener

	mu      sync.Mutex
	target  string
	cut     bool
	swallow bool
	conns   map[*proxied]struct{}
	wg      sync.WaitGroup
}

// proxied is one client connection and its leg to the server.
type proxied struct {
	client, server net.Conn
	mu             sync.Mutex
	swallow        bool
}

// newFaultProxy starts a proxy to target (host:port) and stops it when t
// ends. Its address is p.addr().
func newFaultProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target, conns: map[*proxied]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.cutAll()
		p.wg.Wait()
	})
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut, target, swallow := p.cut, p.target, p.swallow
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		p.wg.Go(func() { p.serve(c, target, swallow) })
	}
}

func (p *faultProxy) serve(c net.Conn, target string, swallow bool) {
	s, err := net.Dial("tcp", target)
	if err != nil {
		c.Close()
		return
	}
	pc := &proxied{client: c, server: s, swallow: swallow}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
	defer func() {
		c.Close()
		s.Close()
		p.mu.Lock()
		delete(p.conns, pc)
		p.mu.Unlock()
	}()
	done := make(chan struct{}, 2)
	go func() { io.Copy(s, c); done <- struct{}{} }()
	go func() { pc.copyBack(); done <- struct{}{} }()
	<-done
}

// copyBack copies the server's bytes to the client, dropping them while
// the connection swallows.
func (pc *proxied) copyBack() {
	buf := make([]byte, 32<<10)
	for {
		n, err := pc.server.Read(buf)
		if n > 0 {
			pc.mu.Lock()
			swallow := pc.swallow
			pc.mu.Unlock()
			if !swallow {
				if _, werr := pc.client.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// swallowAnswers makes every connection, open or new, drop what the
// server sends.
func (p *faultProxy) swallowAnswers() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.swallow = true
	for pc := range p.conns {
		pc.mu.Lock()
		pc.swallow = true
		pc.mu.Unlock()
	}
}

// cutAll closes every connection and refuses new ones.
func (p *faultProxy) cutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for pc := range p.conns {
		pc.client.Close()
		pc.server.Close()
	}
}

// restore passes connections again, to target.
func (p *faultProxy) restore(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.swallow, p.target = false, false, target
}
