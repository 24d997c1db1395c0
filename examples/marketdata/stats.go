package marketdata

import (
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
)

// StatsPath is the path of the backend's statistics: a GET there that is
// not a WebSocket upgrade answers Stats as JSON, to loopback peers only.
const StatsPath = "/stats"

// Stats is the answer of GET StatsPath.
type Stats struct {
	// Connections is Server.Connections.
	Connections int `json:"connections"`
	// Subscriptions is Server.Subscriptions.
	Subscriptions map[string]int `json:"subscriptions"`
}

// Subscriptions returns the live market-data subscriptions (Security and
// Depth topics), counted per venue and kind of topic, keyed
// "<venue>/<kind>": "ASX/Security", "ASX/Depth", "NZX/Security",
// "NZX/Depth", every pair present, zeros included.
//
// A subscription is a connection subscribed to a topic: a Sub that is
// confirmed adds it, an Unsub removes it, and so does the end of its
// connection, once the server has torn the connection down (a socket that
// vanishes is seen by its reader within a moment, or by IdleTimeout at
// worst). A second Sub of a topic on the same connection is not a second
// subscription: it is counted once, as it gets each update once, and one
// Unsub ends it. Static topics (Markets, Feeds, ServerInfo) are not
// counted. The figures are exact at the moment of the call: they are read
// under the lock that every Sub, Unsub and teardown takes.
func (s *Server) Subscriptions() map[string]int {
	return s.market.counts()
}

// serveStats answers GET StatsPath: 403 to a peer that is not on this
// machine (the backend is reached through the gateway only, and its
// counts are nobody else's business), 405 to another method.
func (s *Server) serveStats(w http.ResponseWriter, r *http.Request) {
	if !FromLoopback(r.RemoteAddr) {
		http.Error(w, "the demo backend answers this machine only", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := json.Marshal(Stats{Connections: s.Connections(), Subscriptions: s.Subscriptions()})
	if err != nil { // a struct of ints and a map of ints always marshals
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(body, '\n'))
}

// FromLoopback reports whether addr (an http.Request's RemoteAddr, host
// and port, or a bare address) is a loopback address, IPv4, IPv6 or
// IPv4-mapped. Anything that does not parse is not.
func FromLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
