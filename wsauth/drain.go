package wsauth

import (
	"time"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// Drain refuses new sockets (HTTP 503, as after Shutdown) and closes the
// live ones with code, spread evenly over window: the i-th of n at
// window*i/n from now, so that their clients, reconnecting, reach the
// backend a few at a time instead of all at once. Meanwhile the sessions
// not yet closed go on as before, supervised (an expiry or a revocation
// still ends their authority). It then ends as Shutdown does, and returns
// how many sessions were live. A window of 0 closes them all at once.
func (g *Gateway) Drain(code int, window time.Duration) int {
	g.mu.Lock()
	g.closed, g.closeAs = true, code
	live := make([]*session, 0, len(g.sessions))
	for s := range g.sessions {
		live = append(live, s)
	}
	g.mu.Unlock()
	start := time.Now()
	for i, s := range live {
		time.Sleep(time.Until(start.Add(window * time.Duration(i) / time.Duration(len(live))))) // within window
		contain.Go(g.log(), "ws.close", func() { s.closeClient(code) }, nil)
	}
	g.Shutdown(code)
	return len(live)
}

// Sessions is how many sessions are live now. Any goroutine.
func (g *Gateway) Sessions() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.sessions)
}
