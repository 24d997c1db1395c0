package marketdata

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"context"
	"github.com/gatehouse/gatehouse/internal/contain"
)

// Server is the demo market-data backend: an http.Handler that upgrades
// every request to a WebSocket speaking the message container.
//
// Goroutines: ServeHTTP runs the connection's reader; each connection has
// one writer goroutine; one ticker goroutine moves the prices. All of
// them end when their connection closes or when Close returns.
type Server struct {
	cfg      Config
	logger   *zap.Logger
	upgrader websocket.Upgrader
	market   *market
	slots    chan struct{} // one per live connection, bounds them

	mu     sync.Mutex
	closed bool
	conns  map[*conn]struct{}
	wg     sync.WaitGroup // ServeHTTP calls and writers past the upgrade

	stopMarket chan struct{}
	marketDone chan struct{}
}

// New builds a Server from cfg and starts its market ticker. Call Close
// to stop it.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:        cfg,
		logger:     cfg.Logger,
		market:     newMarket(cfg.Seed),
		slots:      make(chan struct{}, cfg.MaxConnections),
		conns:      map[*conn]struct{}{},
		stopMarket: make(chan struct{}),
		marketDone: make(chan struct{}),
	}
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: cfg.WriteTimeout,
		Subprotocols:     cfg.Subprotocols,
		CheckOrigin:      cfg.CheckOrigin,
		// gorilla's Upgrader answers without context takeover either way,
		// and its Conn then compresses every message.
		EnableCompression: cfg.Compression,
		// Buffers only while a message is being written, not per idle
		// connection.
		WriteBufferPool: &sync.Pool{},
	}
	// A panic in a tick is contained: the market runs again after a pause.
	ctx, stop := context.WithCancel(context.Background())
	contain.Go(s.logger, "demo.market", func() { <-s.stopMarket; stop() }, nil)
	contain.Go(s.logger, "demo.market", func() {
		defer close(s.marketDone)
		contain.Loop(ctx, s.logger, "demo.market", func(ctx context.Context) { s.market.run(cfg.TickInterval, ctx.Done()) })
	}, nil)
	return s, nil
}

// versionForm is the form of the ?version= parameter, e.g. 1.1 or 2.0.
var versionForm = regexp.MustCompile(`^[0-9]{1,4}(\.[0-9]{1,4}){0,3}$`)

// defaultVersion is the protocol version of a connection whose upgrade
// names none (the interface's examples use 1.1).
const defaultVersion = "1.1"

// ServeHTTP upgrades the request to a WebSocket and serves it until the
// connection closes. Refusals happen before the upgrade, as HTTP errors:
// 503 when the server is closed or full; 400 for a malformed query or
// ?version=, a repeated user header, sub-protocols none of which is
// supported, or a request that is not a WebSocket upgrade. The one
// exception is a request to StatsPath that is not an upgrade: it gets
// the server's Stats.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == StatsPath && !websocket.IsWebSocketUpgrade(r) {
		s.serveStats(w, r)
		return
	}
	version := defaultVersion
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		http.Error(w, "malformed query", http.StatusBadRequest)
		return
	}
	if q.Has("version") {
		version = q.Get("version")
		if len(q["version"]) != 1 || !versionForm.MatchString(version) {
			http.Error(w, "malformed version parameter", http.StatusBadRequest)
			return
		}
	}
	users := r.Header.Values(s.cfg.UserIDHeader)
	if len(users) > 1 {
		http.Error(w, "repeated user header", http.StatusBadRequest)
		return
	}
	var user string
	if len(users) == 1 {
		user = users[0]
	}
	if offered := websocket.Subprotocols(r); len(offered) > 0 &&
		!slices.ContainsFunc(offered, func(p string) bool { return slices.Contains(s.cfg.Subprotocols, p) }) {
		http.Error(w, "unsupported sub-protocol", http.StatusBadRequest)
		return
	}

	if !s.begin() {
		w.Header().Set("Retry-After", "5")
		http.Error(w, "server unavailable", http.StatusServiceUnavailable)
		return
	}
	defer s.end()

	ws, err := s.upgrader.Upgrade(hijackable(w), r, nil)
	if err != nil {
		// The upgrader has answered with an HTTP error.
		s.logger.Debug("upgrade refused", zap.Error(err))
		return
	}
	c := newConn(s, ws, user, version)
	if !s.register(c) {
		deadline := time.Now().Add(s.cfg.CloseGrace)
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server closing"), deadline)
		_ = ws.Close()
		return
	}
	defer s.unregister(c)
	s.logger.Debug("connection opened", zap.String("user", user), zap.String("subprotocol", ws.Subprotocol()),
		zap.String("version", version))
	c.serve()
}

// begin takes a connection slot, unless the server is closed or full.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	select {
	case s.slots <- struct{}{}:
	default:
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *Server) end() {
	<-s.slots
	s.wg.Done()
}

// register tracks c for Close, unless the server closed during the
// upgrade.
func (s *Server) register(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1) // c's writer
	return true
}

func (s *Server) unregister(c *conn) {
	s.market.remove(c)
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Connections returns the number of connections holding one of the
// MaxConnections slots (being upgraded, live, or being torn down): a new
// connection is accepted while it is below MaxConnections.
func (s *Server) Connections() int {
	return len(s.slots)
}

// Close stops the market and closes every connection with 1001 (going
// away), then waits until every goroutine of the server has ended. A
// client that does not answer the close frame within CloseGrace is
// dropped. Later upgrades get HTTP 503. Close is safe to call more than
// once; it always returns nil.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		<-s.marketDone
		return nil
	}
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	close(s.stopMarket)
	for _, c := range conns {
		c.kill(websocket.CloseGoingAway, "server closing")
	}
	done := make(chan struct{})
	contain.Go(s.logger, "demo.close", func() {
		s.wg.Wait()
		close(done)
	}, nil)
	// A writer blocked on a client that does not read would hold Close
	// for up to WriteTimeout; after the grace, drop the connections.
	grace := time.NewTimer(2 * s.cfg.CloseGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		for _, c := range conns {
			_ = c.ws.NetConn().Close()
		}
		<-done
	}
	<-s.marketDone
	return nil
}

// hijackable returns w as gorilla's Upgrader needs it: an http.Hijacker.
// A ResponseWriter that wraps another without implementing Hijacker
// itself (Caddy's, for one) is hijacked through
// http.NewResponseController, which follows its Unwrap method.
func hijackable(w http.ResponseWriter) http.ResponseWriter {
	if _, ok := w.(http.Hijacker); ok {
		return w
	}
	return hijacker{w}
}

type hijacker struct{ http.ResponseWriter }

func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
}

var _ http.Hijacker = hijacker{}

var _ http.Handler = (*Server)(nil)
