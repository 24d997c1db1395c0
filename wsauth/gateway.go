package wsauth

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
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
// between the two (docs/design.md, "How data flows": Message service). Build it
// with New; it is safe for concurrent use.
//
// Goroutines: after the upgrade ServeHTTP starts the session's client
// reader on a goroutine of its own and returns (on an extended CONNECT it
// becomes the client reader itself, the stream ending with the handler);
// each session adds a client writer and, once authenticated, a backend
// reader (session.go says what each owns). Gateway.wg counts the sessions
// as ServeHTTP calls, until the client reader ends. One supervisor per Gateway (supervise.go), started
// with the first session and ended by Shutdown, watches the authenticated
// sessions' expiry, revocation and grace. The Gateway's own state (the
// live sessions, the closed flag, the supervisor's handles) is guarded by
// mu; the unauthenticated count is atomic.
type Gateway struct {
	cfg      Config
	log      *zap.Logger
	upgrader websocket.Upgrader
	dialer   websocket.Dialer

	unauth    atomic.Int64 // sockets open and not yet authenticated
	verifying atomic.Int64 // upgrades whose Authorization header is being verified

	srcMu     sync.Mutex
	srcUnauth map[string]int // unauthenticated sockets by source (sourceKey)
	users     map[string]int // authenticated sessions by subject (srcMu too)

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
	g := &Gateway{cfg: cfg, log: cfg.Logger, sessions: map[*session]struct{}{}, lingering: map[net.Conn]struct{}{}, srcUnauth: map[string]int{}, users: map[string]int{}}
	g.upgrader = websocket.Upgrader{
		HandshakeTimeout:  cfg.WriteTimeout,
		Subprotocols:      slices.Clone(cfg.Subprotocols),
		CheckOrigin:       g.checkOrigin,
		EnableCompression: !cfg.DisableCompression,
		Error: func(w http.ResponseWriter, _ *http.Request, status int, _ error) {
			http.Error(w, http.StatusText(status), status)
		},
	}
	g.upgrader.WriteBufferPool = &bufferPool{}
	g.dialer = websocket.Dialer{
		HandshakeTimeout:  cfg.DialTimeout,
		Proxy:             nil,
		NetDialContext:    wsframe.Dial(cfg.WriteTimeout),
		NetDialTLSContext: wsframe.DialTLS(cfg.WriteTimeout),
		WriteBufferPool:   &bufferPool{},
		// The wsframe.Conn reads a TCP socket 32 KiB at a time; gorilla's
		// own buffer, held by every connection, holds frame headers.
		ReadBufferSize: 1 << 10,
	}
	return g, nil
}

// versionForm is the form a ?version= must have (1.1, 2.0, 3).
var versionForm = regexp.MustCompile(`^[0-9]{1,4}(\.[0-9]{1,4}){0,3}$`)

// ServeHTTP upgrades r to a WebSocket and starts the session, which runs
// until either leg ends (on HTTP/1.1, after ServeHTTP has returned). Before the 101 it checks, in order: that the gateway is not
// shut down (503), the upgrade itself (400), ?version= (400), Origin
// (403), the sub-protocol (400), an Authorization header (403 when
// refused, 503 on a verifier fault) and, without one, the bound on
// unauthenticated sockets (503).
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	closed := g.closed
	if !closed {
		g.wg.Add(1)
	}
	g.mu.Unlock()
	tr := startUpgrade(r, g.cfg.TraceSubject)
	if closed {
		refuse(w, &tr, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
		return
	}
	defer g.wg.Done()

	extended := isExtendedConnect(r)
	if extended {
		w, r = extendedUpgrade(w, r)
	}
	if !websocket.IsWebSocketUpgrade(r) {
		msg := "websocket upgrade required"
		if r.ProtoMajor >= 2 {
			msg = "websocket over HTTP/2 or HTTP/3 opens with an extended CONNECT (RFC 8441, RFC 9220)"
		}
		refuse(w, &tr, msg, http.StatusBadRequest)
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	version, hasVersion := q.Get("version"), q.Has("version")
	if err != nil || hasVersion && (len(q["version"]) != 1 || !versionForm.MatchString(version)) {
		refuse(w, &tr, "bad version", http.StatusBadRequest)
		return
	}
	if !g.checkOrigin(r) {
		refuse(w, &tr, http.StatusText(http.StatusForbidden), http.StatusForbidden)
		return
	}
	if offered := websocket.Subprotocols(r); len(offered) > 0 && !slices.ContainsFunc(offered, func(p string) bool {
		return slices.Contains(g.cfg.Subprotocols, p)
	}) {
		refuse(w, &tr, "unsupported sub-protocol", http.StatusBadRequest)
		return
	}

	// A socket without a credential counts against MaxUnauthenticated,
	// and against its source's share of it, until it authenticates. An upgrade with an Authorization header
	// counts against a bound of its own, as large, while its token is
	// verified (within AuthTimeout): a hung verifier holds no more
	// requests than that, none longer than AuthTimeout, and sockets
	// without a credential cannot keep clients with one out.
	src := sourceKey(g.cfg.ClientIP(r))
	var id *Identity
	var at time.Time // when the verifier was asked
	if h := r.Header.Values("Authorization"); len(h) > 0 {
		if !g.take(&g.verifying, "ws header verification bound reached") {
			refuse(w, &tr, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
			return
		}
		got, gotAt, status := func() (*Identity, time.Time, int) {
			defer g.verifying.Add(-1)
			return g.headerAuth(r, h)
		}()
		if status != 0 {
			refuse(w, &tr, http.StatusText(status), status)
			return
		}
		id, at = got, gotAt
		tr.attempt(AuthHeader, AuthResultOK, "")
	} else if !g.takeUnauth(src) {
		refuse(w, &tr, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
		return
	}

	conn, err := g.upgrader.Upgrade(hijacker{w, g.cfg.WriteTimeout}, r, nil)
	if err != nil {
		if id == nil {
			g.giveUnauth(src)
		}
		g.log.Debug("ws upgrade failed", zap.Error(err))
		tr.refused(0)
		return // the Upgrader has answered
	}
	s := newSession(g, conn, r, version, hasVersion, tr)
	if ok, code := g.track(s); !ok {
		// Upgraded while Shutdown ran: closed as the live ones are.
		if id == nil {
			g.giveUnauth(src)
		}
		tr.closed(time.Now(), "gateway", code, StateUnauthenticated, 0, nil)
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), deadline(g.cfg.WriteTimeout))
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
		contain.Go(g.log, "ws.session", func() {
			defer g.wg.Done()
			defer g.untrack(s)
			s.run(id, at)
		}, nil)
		return
	}
	defer g.untrack(s)
	s.run(id, at)
}

// refuse answers an upgrade with status before the 101, and ends its span.
func refuse(w http.ResponseWriter, tr *sockTrace, msg string, status int) {
	http.Error(w, msg, status)
	tr.refused(status)
}

// take takes one of the MaxUnauthenticated places n counts; false, and
// msg logged, when none is left.
func (g *Gateway) take(n *atomic.Int64, msg string) bool {
	if n.Add(1) <= int64(g.cfg.MaxUnauthenticated) {
		return true
	}
	n.Add(-1)
	g.log.Warn(msg, zap.Int("max", g.cfg.MaxUnauthenticated))
	return false
}

// takeUnauth takes one of the MaxUnauthenticated places for a socket
// from src (a sourceKey), within src's share, MaxUnauthenticated/16 (at
// least 1): one address, or one IPv6 /64, cannot take every place and
// keep the clients that authenticate by an Auth message (every browser:
// it cannot set an Authorization header) out. false, logged, when none is
// left.
func (g *Gateway) takeUnauth(src string) bool {
	if !g.take(&g.unauth, "ws unauthenticated socket bound reached") {
		return false
	}
	g.srcMu.Lock()
	defer g.srcMu.Unlock()
	if g.srcUnauth[src] >= max(g.cfg.MaxUnauthenticated/16, 1) {
		g.unauth.Add(-1)
		g.log.Warn("ws unauthenticated socket bound of one source reached", zap.String("source", src))
		return false
	}
	g.srcUnauth[src]++
	return true
}

// addUnauth counts a socket from src as unauthenticated without a bound
// (one whose Authorization header was accepted, until authenticate gives
// its place back).
func (g *Gateway) addUnauth(src string) {
	g.unauth.Add(1)
	g.srcMu.Lock()
	g.srcUnauth[src]++
	g.srcMu.Unlock()
}

// giveUnauth gives back a place takeUnauth or addUnauth took.
func (g *Gateway) giveUnauth(src string) {
	g.unauth.Add(-1)
	g.srcMu.Lock()
	uncount(g.srcUnauth, src)
	g.srcMu.Unlock()
}

// uncount takes one from m[k], deleting the key at zero.
func uncount(m map[string]int, k string) {
	if n := m[k] - 1; n > 0 {
		m[k] = n
	} else {
		delete(m, k)
	}
}

// enterUser counts a session of subject, false when the user has limit
// live sessions already (then nothing is counted). Check and count are
// one step, under srcMu: a burst of authentications cannot pass the limit.
func (g *Gateway) enterUser(subject string, limit int) bool {
	g.srcMu.Lock()
	defer g.srcMu.Unlock()
	if g.users[subject] >= limit {
		return false
	}
	g.users[subject]++
	return true
}

// leaveUser uncounts a session enterUser counted.
func (g *Gateway) leaveUser(subject string) {
	g.srcMu.Lock()
	uncount(g.users, subject)
	g.srcMu.Unlock()
}

// sourceKey is the source a client address (host[:port]) counts as: the
// IP address, or its /64 for IPv6 (a host is given a /64 at least).
func sourceKey(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if ip = ip.Unmap(); ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// headerAuth verifies an upgrade's Authorization header, "<Provider>
// <token>" with Provider Bearer (any case, RFC 7235), within AuthTimeout,
// and says when it asked the verifier. status is 0 when it is accepted,
// else the HTTP status to answer.
func (g *Gateway) headerAuth(r *http.Request, h []string) (*Identity, time.Time, int) {
	m := g.cfg.Metrics
	scheme, token, ok := strings.Cut(h[0], " ")
	token = strings.TrimLeft(token, " ")
	if len(h) != 1 || !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || len(token) > g.cfg.MaxTokenBytes {
		m.Auth(AuthHeader, AuthResultNo)
		g.log.Info("ws authentication", zap.String("method", string(AuthHeader)), zap.String("result", AuthResultNo),
			zap.String("reason", "malformed authorization header"), zap.String("remote", g.cfg.ClientIP(r)))
		return nil, time.Time{}, http.StatusForbidden
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.AuthTimeout)
	defer cancel()
	at := time.Now()
	id, err := g.cfg.Verifier.VerifyAccessToken(ctx, token)
	if err != nil {
		if errors.Is(err, ErrRefused) {
			m.Auth(AuthHeader, AuthResultNo)
			g.log.Info("ws authentication", zap.String("method", string(AuthHeader)), zap.String("result", AuthResultNo),
				zap.String("reason", refusalReason(err)), zap.String("remote", g.cfg.ClientIP(r)))
			return nil, time.Time{}, http.StatusForbidden
		}
		m.Auth(AuthHeader, AuthResultErr)
		g.log.Error("ws token verification failed", zap.Error(err))
		return nil, time.Time{}, http.StatusServiceUnavailable
	}
	if !id.Expiry.IsZero() && !id.Expiry.After(g.cfg.Now()) {
		m.Auth(AuthHeader, AuthResultNo)
		return nil, time.Time{}, http.StatusForbidden
	}
	id.Token = token
	m.Auth(AuthHeader, AuthResultOK)
	g.log.Info("ws authentication", zap.String("method", string(AuthHeader)), zap.String("result", AuthResultOK),
		zap.String("user", id.Subject), zap.String("client_id", id.ClientID), zap.String("remote", g.cfg.ClientIP(r)))
	return &id, at, 0
}

func refusalReason(err error) string {
	if r, ok := errors.AsType[*Refusal](err); ok {
		return r.Reason
	}
	return "refused"
}

// checkOrigin allows a request without Origin, and one whose Origin is in
// AllowedOrigins ("*": any); with no list, one from the request's host.
func (g *Gateway) checkOrigin(r *http.Request) bool {
	origin := r.Header.Values("Origin")
	if len(origin) == 0 {
		return true
	}
	if len(origin) > 1 {
		return false
	}
	if len(g.cfg.AllowedOrigins) == 0 {
		o := origin[0]
		_, host, ok := strings.Cut(o, "://")
		return ok && strings.EqualFold(host, r.Host)
	}
	for _, a := range g.cfg.AllowedOrigins {
		if a == "*" || a == strings.TrimSuffix(origin[0], "/") {
			return true
		}
	}
	return false
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
		var ctx context.Context
		ctx, g.stopSup = context.WithCancel(context.Background())
		done := make(chan struct{})
		g.supDone = done
		contain.Go(g.log, "ws.supervisor", func() {
			defer close(done)
			contain.Loop(ctx, g.log, "ws.supervisor", g.supervise)
		}, nil)
	}
	return true, 0
}

func (g *Gateway) untrack(s *session) {
	g.mu.Lock()
	delete(g.sessions, s)
	g.mu.Unlock()
}

// Shutdown refuses new sockets and closes every live one (and one whose
// upgrade it overtakes) with code: 1001 (websocket.CloseGoingAway) when
// the process exits, 1012 (websocket.CloseServiceRestart) on a config
// reload; the Caddy glue decides, and when. It returns once every session
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
		contain.Go(g.log, "ws.close", func() { s.closeClient(code) }, nil) // each returns within CloseGrace
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
// itself, and gorilla takes a write buffer only to write a data message (a
// compressed one), giving it back after: an idle connection holds none.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() any  { return b.p.Get() }
func (b *bufferPool) Put(v any) { b.p.Put(v) }

// CheckBackend reports whether a backend answers: a TCP connection to one of the
// upstreams (tried in order) within ctx, closed at once. For a readiness probe: it
// says nothing of the backend's WebSocket service, only that something listens.
func (g *Gateway) CheckBackend(ctx context.Context) error {
	var errs []error
	for _, u := range g.cfg.Upstreams {
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
