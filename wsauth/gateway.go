package wsauth

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// Gateway is the message service's http.Handler: it upgrades the client's
// request, authenticates the socket, opens the backend leg and relays
// between the two (docs/design.md, "How data flows": Message service).
// Build it with New; it is safe for concurrent use.
//
// Goroutines: after the upgrade ServeHTTP starts the session's client
// reader on a goroutine of its own and returns (on an extended CONNECT it
// becomes the client reader itself, the stream ending with the handler);
// each session adds a client writer and, once authenticated, a backend
// reader (session.go says what each owns). Gateway.wg counts the sessions
// as ServeHTTP calls, until the client reader ends. One supervisor per
// Gateway (supervise.go), started with the first session and ended by
// Shutdown, watches the authenticated sessions' expiry, revocation and
// grace. The Gateway's own state (the live sessions, the closed flag, the
// supervisor's handles) is guarded by mu; what admit counts (places) has
// its own lock.
type Gateway struct {
	// conf is the configuration in force: Reconfigure replaces it whole,
	// and every reader loads it (cfg), so that a reader sees one
	// configuration's hooks, policy and limits, never a mix.
	conf     atomic.Pointer[Config]
	reconfMu sync.Mutex // one Reconfigure at a time
	dialer   websocket.Dialer

	places places // what admit counts (admit.go)

	mu        sync.Mutex
	closed    bool                  // Shutdown was called: no new sockets
	closeAs   int                   // the close code Shutdown was given
	sessions  map[*session]struct{} // live sessions
	wg        sync.WaitGroup        // one per live session
	stopSup   context.CancelFunc    // ends the supervisor; nil until it runs
	supStarts atomic.Int32          // the supervisor's (re)starts
	supDone   chan struct{}         // closed when the supervisor has ended
	lingering map[net.Conn]struct{} // client sockets lingering after an unanswered close (lingerClose)
	lwg       sync.WaitGroup        // one per lingering socket
}

// New builds the Gateway cfg configures.
func New(cfg Config) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.gen = 1
	g := &Gateway{sessions: map[*session]struct{}{}, lingering: map[net.Conn]struct{}{},
		places: places{bySource: map[string]int{}, users: map[string]int{}}}
	cfg.upgrader = g.newUpgrader(&cfg)
	g.conf.Store(&cfg)
	g.dialer = websocket.Dialer{
		HandshakeTimeout:  cfg.Backend.DialTimeout,
		EnableCompression: cfg.Backend.Compression,
		Proxy:             nil,
		NetDialContext:    wsframe.Dial(cfg.Transport.WriteTimeout),
		NetDialTLSContext: wsframe.DialTLS(cfg.Transport.WriteTimeout),
		WriteBufferPool:   &bufferPool{},
		// The wsframe.Conn reads a TCP socket 32 KiB at a time; gorilla's
		// own buffer, held by every connection, holds frame headers.
		ReadBufferSize: 1 << 10,
	}
	return g, nil
}

// newUpgrader is the Upgrader of cfg's admission settings: the
// sub-protocols, compression, and the handshake's write timeout (the
// origin check reads the configuration in force).
func (g *Gateway) newUpgrader(cfg *Config) *websocket.Upgrader {
	return &websocket.Upgrader{
		HandshakeTimeout:  cfg.Transport.WriteTimeout,
		Subprotocols:      slices.Clone(cfg.Transport.Subprotocols),
		CheckOrigin:       g.checkOrigin,
		EnableCompression: !cfg.Transport.DisableCompression,
		Error: func(w http.ResponseWriter, _ *http.Request, status int, _ error) {
			http.Error(w, http.StatusText(status), status)
		},
		WriteBufferPool: &bufferPool{},
	}
}

// cfg is the configuration in force. Any goroutine.
func (g *Gateway) cfg() *Config { return g.conf.Load() }

// log is the configuration's logger. Any goroutine.
func (g *Gateway) log() *zap.Logger { return g.conf.Load().Hooks.Logger }

// ServeHTTP upgrades r to a WebSocket and starts the session, which runs
// until either leg ends (on HTTP/1.1, after ServeHTTP has returned). A
// gateway shut down answers 503; otherwise the request must pass admit's
// checks before the 101 (upgrade). A traced request's upgrade span
// (trace.go) starts here.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	closed := g.closed
	if !closed {
		g.wg.Add(1)
	}
	g.mu.Unlock()
	tr := startUpgrade(r, g.cfg().TraceSubject)
	if closed {
		refuse(w, &tr, status{code: http.StatusServiceUnavailable})
		return
	}
	defer g.wg.Done()

	extended := isExtendedConnect(r)
	if extended {
		var sr *streamResponse
		sr, r = extendedUpgrade(w, r)
		defer sr.end()
		w = sr
	}
	adm, st := g.admit(r)
	if st.code != 0 {
		refuse(w, &tr, st)
		return
	}
	if adm.id != nil {
		tr.attempt(AuthHeader, AuthResultOK, "")
	}
	g.upgrade(w, r, adm, tr, extended)
}

// upgrade answers an admitted request with the 101 and runs its session:
// on a goroutine of its own, or, on an extended CONNECT, on ServeHTTP's.
// An upgrade that fails, or that Shutdown overtakes, gives back the place
// admit took, and ends the upgrade's span.
func (g *Gateway) upgrade(w http.ResponseWriter, r *http.Request, adm admission, tr sockTrace, extended bool) {
	conn, err := adm.upgrader.Upgrade(hijacker{w, g.cfg().Transport.WriteTimeout}, r, nil)
	if err != nil {
		g.giveBack(&adm)
		g.log().Debug("ws upgrade failed", zap.Error(err))
		tr.refused(0)
		return // the Upgrader has answered
	}
	s := newSession(g, conn, r, &adm, tr)
	if ok, code := g.track(s); !ok {
		// Upgraded while Shutdown ran: closed as the live ones are.
		g.giveBack(&adm)
		tr.closed(time.Now(), "gateway", code, StateUnauthenticated, 0, nil)
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), deadline(g.cfg().Transport.WriteTimeout))
		_ = conn.Close()
		return
	}
	if !extended {
		// The hijacked connection is the session's: the session runs on a
		// goroutine of its own, and the server's goroutine, its deep stack
		// and its request go. (Its context is cancelled on return: the
		// session has its own.) A stream of an extended CONNECT lives only
		// as long as this handler, which then runs the session itself.
		g.wg.Add(1) // while ServeHTTP's count is held: Shutdown waits for it
		contain.Go(g.log(), "ws.session", func() {
			defer g.wg.Done()
			defer g.untrack(s)
			s.run(adm.id, adm.at)
		}, nil)
		return
	}
	defer g.untrack(s)
	s.run(adm.id, adm.at)
}

// refuse answers an upgrade with st before the 101, and ends its span.
func refuse(w http.ResponseWriter, tr *sockTrace, st status) {
	st.write(w)
	tr.refused(st.code)
}

// track adds s to the live sessions; false, with the code to close it
// with, once Shutdown was called.
func (g *Gateway) track(s *session) (bool, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false, g.closeAs
	}
	g.sessions[s] = struct{}{}
	if g.stopSup == nil {
		g.startSupervisorLocked()
	}
	return true, 0
}

// startSupervisorLocked starts the supervisor. g.mu held.
func (g *Gateway) startSupervisorLocked() {
	var ctx context.Context
	ctx, g.stopSup = context.WithCancel(context.Background())
	done := make(chan struct{})
	g.supDone = done
	log := g.log()
	contain.Go(log, "ws.supervisor", func() {
		defer close(done)
		contain.Loop(ctx, log, "ws.supervisor", g.supervise)
	}, nil)
}

func (g *Gateway) untrack(s *session) {
	g.mu.Lock()
	delete(g.sessions, s)
	g.mu.Unlock()
}

// Shutdown refuses new sockets and closes every live one (and one whose
// upgrade it overtakes) with code, all at once (Drain spreads them: the
// Caddy glue drains a gateway a reload does not keep, and at exit). It returns once every session
// and the supervisor have ended, which the close handshake bounds
// (WriteTimeout and CloseGrace), and sockets lingering after an unanswered
// close are closed.
func (g *Gateway) Shutdown(code int) {
	g.mu.Lock()
	g.closed, g.closeAs = true, code
	live := make([]*session, 0, len(g.sessions))
	for s := range g.sessions {
		live = append(live, s)
	}
	stop, supDone := g.stopSup, g.supDone
	g.mu.Unlock()
	if stop != nil {
		stop()
		<-supDone
	}
	for _, s := range live {
		contain.Go(g.log(), "ws.close", func() { s.closeClient(code) }, nil) // each returns within CloseGrace
	}
	g.wg.Wait()
	g.endLingering()
}

// hijacker gives gorilla's Upgrader the http.Hijacker it asserts. Caddy's
// ResponseWriter does not implement it itself (it wraps the server's), so
// Hijack goes through http.NewResponseController, which follows Unwrap
// (docs/design.md, "Caddy mechanics"). The connection it hands gorilla is a
// wsframe.Conn, through which the session batches its writes.
type hijacker struct {
	http.ResponseWriter
	writeTimeout time.Duration
}

func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return wsframe.NewServer(c, h.writeTimeout), rw, nil
}

func (h hijacker) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// bufferPool is gorilla's WriteBufferPool: the session frames data
// itself, compressed or not, and gorilla takes a write buffer only to write
// a data message on a connection not the gateway's (wsframe.Conn) or the
// backend leg's, giving it back after: an idle connection holds none.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() any  { return b.p.Get() }
func (b *bufferPool) Put(v any) { b.p.Put(v) }

// CheckBackend reports whether a backend answers: a TCP connection to one of the
// upstreams (tried in order) within ctx, closed at once. For a readiness probe: it
// says nothing of the backend's WebSocket service, only that something listens.
func (g *Gateway) CheckBackend(ctx context.Context) error {
	var errs []error
	for _, u := range g.cfg().Backend.Upstreams {
		addr, err := upstreamAddr(u)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// upstreamAddr is the host:port of an upstream's URL (ws:// on 80, wss:// on 443 by
// default).
func upstreamAddr(u string) (string, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	port := pu.Port()
	if port == "" {
		port = "80"
		if pu.Scheme == "wss" {
			port = "443"
		}
	}
	return net.JoinHostPort(pu.Hostname(), port), nil
}
