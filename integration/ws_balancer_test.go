package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// balancer is a TCP load balancer on loopback, round-robin over its
// backends: a connection goes to the next backend that accepts it, so
// that a stopped instance's share goes to the others. It records which
// backend each client address reached.
type balancer struct {
	l        net.Listener
	backends []string
	next     atomic.Uint32

	mu     sync.Mutex
	routes map[string]string // client address -> backend address
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

// startBalancer balances over backends until the test ends.
func startBalancer(t *testing.T, backends ...string) *balancer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{l: l, backends: backends, routes: map[string]string{}, conns: map[net.Conn]bool{}}
	b.wg.Go(b.serve)
	t.Cleanup(func() {
		l.Close()
		b.mu.Lock()
		for c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func (b *balancer) addr() string { return b.l.Addr().String() }

func (b *balancer) serve() {
	for {
		c, err := b.l.Accept()
		if err != nil {
			return
		}
		b.wg.Go(func() { b.proxy(c) })
	}
}

// track adds cs to the open connections, which the test's end closes.
func (b *balancer) track(cs ...net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range cs {
		b.conns[c] = true
	}
}

// untrack closes cs and forgets them.
func (b *balancer) untrack(cs ...net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range cs {
		delete(b.conns, c)
		c.Close()
	}
}

func (b *balancer) proxy(c net.Conn) {
	b.track(c)
	defer b.untrack(c)
	start := int(b.next.Add(1))
	for i := range b.backends {
		addr := b.backends[(start+i)%len(b.backends)]
		up, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue
		}
		b.track(up)
		b.mu.Lock()
		b.routes[c.RemoteAddr().String()] = addr
		b.mu.Unlock()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
		<-done
		b.untrack(up)
		return
	}
}

// route is the backend the client at addr reached.
func (b *balancer) route(addr string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.routes[addr]
}

// balancedClient is a client of the demo's /ws behind the balancer: on
// one TCP connection it gets a token (a password grant) and opens the
// socket with it, so that both reach the same instance, subscribes, and
// does so again whenever the socket ends.
type balancedClient struct {
	mu       sync.Mutex
	current  *quoteSession
	instance string    // the backend address of the current socket
	since    time.Time // when the current socket was opened
	ends     []ending  // how each socket before the current one ended
	ended    []string  // and the backend address it was on
}

// connect opens one socket through the balancer b; onToken is given the
// token it got, for the logs' secret check.
func (cl *balancedClient) connect(b *balancer, onToken func(string)) error {
	conn, err := net.DialTimeout("tcp", b.addr(), wsTimeout)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			conn.Close()
		}
	}()
	_ = conn.SetDeadline(time.Now().Add(wsTimeout))
	form := url.Values{"grant_type": {"password"}, "username": {"demo"}, "password": {"demo"}, "client_id": {publicClient}}
	req, err := http.NewRequest(http.MethodPost, "http://"+b.addr()+"/connect/token", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if err := req.Write(conn); err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return err
	}
	var tok tokenResponse
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil || br.Buffered() > 0 {
		return fmt.Errorf("token: %s (%v)", resp.Status, err)
	}
	onToken(tok.AccessToken)
	_ = conn.SetDeadline(time.Time{})
	d := leanDialer
	d.NetDialContext = func(context.Context, string, string) (net.Conn, error) { return conn, nil }
	c, resp, err := d.Dial("ws://"+b.addr()+"/ws?version=1.1", http.Header{"Authorization": {"Bearer " + tok.AccessToken}})
	if err != nil {
		return fmt.Errorf("upgrade: %v (%s)", err, respStatus(resp))
	}
	ok = true
	s := newQuoteSession(c)
	cl.mu.Lock()
	cl.current, cl.instance, cl.since = s, b.route(conn.LocalAddr().String()), time.Now()
	cl.mu.Unlock()
	return s.subscribe()
}

// run keeps a socket open until ctx ends: it reconnects whenever the
// socket ends, and after a failed attempt, every 100ms.
func (cl *balancedClient) run(ctx context.Context, b *balancer, onToken func(string)) {
	for ctx.Err() == nil {
		if err := cl.connect(b, onToken); err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		cl.mu.Lock()
		s, instance := cl.current, cl.instance
		cl.mu.Unlock()
		select {
		case <-s.done:
			cl.mu.Lock()
			cl.ends, cl.ended = append(cl.ends, s.ending()), append(cl.ended, instance)
			cl.mu.Unlock()
		case <-ctx.Done():
			s.c.Close()
			<-s.done
		}
	}
}

// receiving reports whether the client's socket is on instance and has
// had a quote since it opened.
func (cl *balancedClient) receiving(instance string) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.current != nil && cl.instance == instance && !cl.current.ended() && cl.current.last.Load() > cl.since.UnixNano()
}

// TestWSExitBehindABalancer: two instances of the demo, whose /ws relays
// to one backend in a process of its own, behind the test's round-robin
// balancer; clients each get a token and open a socket through it, and
// reconnect whenever the socket ends. SIGTERM to one instance closes its
// sockets with 1012, spread over its drain window, none before the
// signal; every client is then on the other instance (a new token, a new
// socket, subscribed again) and receiving, and those that were there all
// along were never closed. It failed when the exit closed every socket
// at once.
func TestWSExitBehindABalancer(t *testing.T) {
	t.Parallel()
	backend, upstream := externalBackend(t)
	config := externalBackendConfig(t, "balanced", upstream, "drain_window "+drainWindow.String())
	a := StartGatehouseWith(t, Options{Config: config})
	b := StartGatehouseWith(t, Options{Config: config})
	backend.AlsoCheckSecretsOf(a, b)
	a.AlsoCheckSecretsOf(b)
	b.AlsoCheckSecretsOf(a)
	addrA, addrB := "127.0.0.1:"+strconv.Itoa(a.Port), "127.0.0.1:"+strconv.Itoa(b.Port)
	lb := startBalancer(t, addrA, addrB)
	onToken := func(tok string) { a.AddSecret(tok); b.AddSecret(tok) }

	const n = 40
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	clients := make([]*balancedClient, n)
	for i := range clients {
		clients[i] = &balancedClient{}
		wg.Go(func() { clients[i].run(ctx, lb, onToken) })
	}
	waitClients := func(what string, ok func(*balancedClient) bool) {
		t.Helper()
		deadline := time.Now().Add(2 * wsTimeout)
		for {
			waiting := 0
			for _, cl := range clients {
				if !ok(cl) {
					waiting++
				}
			}
			if waiting == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d clients not %s within %v", waiting, n, what, 2*wsTimeout)
			}
			time.Sleep(pollInterval)
		}
	}
	waitClients("receiving", func(cl *balancedClient) bool {
		cl.mu.Lock()
		instance := cl.instance
		cl.mu.Unlock()
		return instance != "" && cl.receiving(instance)
	})
	var onA []*balancedClient
	for _, cl := range clients {
		cl.mu.Lock()
		if cl.instance == addrA {
			onA = append(onA, cl)
		}
		cl.mu.Unlock()
	}
	if len(onA) == 0 || len(onA) == n {
		t.Fatalf("%d of %d clients on the first instance, want some on each", len(onA), n)
	}

	from := time.Now()
	a.Stop()
	stopped := time.Now()
	waitClients("back on the other instance and receiving", func(cl *balancedClient) bool { return cl.receiving(addrB) })

	var ends []ending
	for i, cl := range clients {
		cl.mu.Lock()
		for j, e := range cl.ends {
			if cl.ended[j] != addrA {
				t.Errorf("client %d: its socket on the instance that stayed closed (%d, %v)", i, e.code, e.err)
			}
			ends = append(ends, e)
		}
		cl.mu.Unlock()
	}
	if len(ends) != len(onA) {
		t.Errorf("%d sockets closed, want the %d on the stopped instance", len(ends), len(onA))
	}
	// The exit waits for the drain: every close comes before it ends.
	until := from.Add(drainWindow + drainSlack)
	if stopped.Before(until) {
		until = stopped
	}
	checkSpread(t, "exit", ends, from, until, drainWindow)
	metricBecomes(t, b, `gatehouse_ws_sessions{state="authenticated"}`, n)
	t.Logf("%d of %d clients moved in %v; the exit took %v", len(onA), n, time.Since(from).Round(time.Millisecond), stopped.Sub(from).Round(time.Millisecond))
}
