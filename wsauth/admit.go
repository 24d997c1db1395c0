package wsauth

import (
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
)

// admission is what admit learned of an upgrade request it accepts: what
// its session is built from.
type admission struct {
	version    string              // the ?version= the client asked for
	hasVersion bool                // it asked for one
	src        string              // sourceKey of the client's address
	id         *Identity           // verified from the Authorization header; nil without one
	at         time.Time           // when the verifier was asked
	sid        string              // the session's id in the audit; "" when not auditing
	upgrader   *websocket.Upgrader // the Upgrader of the configuration whose sub-protocols were checked
}

// places are what a Gateway counts to admit sockets: the places of the
// sockets not yet authenticated (MaxUnauthenticated), in all and by
// source, the upgrades whose Authorization header is being verified, and
// the authenticated sessions of each user (Limits.Sessions). unauth and
// verifying are atomic; mu guards the maps.
type places struct {
	unauth    atomic.Int64 // sockets open and not yet authenticated
	verifying atomic.Int64 // upgrades whose Authorization header is being verified

	mu       sync.Mutex
	bySource map[string]int // unauthenticated sockets by source (sourceKey)
	users    map[string]int // authenticated sessions by subject
}

// status is the HTTP answer to an upgrade request refused before the 101:
// code, with text as the body (code's own text when empty). The zero
// status refuses nothing.
type status struct {
	code int
	text string
}

// write answers the request with st.
func (st status) write(w http.ResponseWriter) {
	text := st.text
	if text == "" {
		text = http.StatusText(st.code)
	}
	http.Error(w, text, st.code)
}

// versionForm is the form a ?version= must have (1.1, 2.0, 3).
var versionForm = regexp.MustCompile(`^[0-9]{1,4}(\.[0-9]{1,4}){0,3}$`)

// admit checks an upgrade request before the 101, in order: the upgrade
// itself (400), ?version= (400), Origin (403), the sub-protocol (400), an
// Authorization header (403 when refused, 503 on a verifier fault) and,
// without one, the bound on unauthenticated sockets (503). A request it
// admits without an identity holds one of the unauthenticated places,
// which the session gives back when it authenticates or ends (giveBack,
// if it never starts).
func (g *Gateway) admit(r *http.Request) (admission, status) {
	if !websocket.IsWebSocketUpgrade(r) {
		msg := "websocket upgrade required"
		if r.ProtoMajor >= 2 {
			msg = "websocket over HTTP/2 or HTTP/3 opens with an extended CONNECT (RFC 8441, RFC 9220)"
		}
		return admission{}, status{http.StatusBadRequest, msg}
	}
	if g.cfg().Hooks.Audit.Refusing() {
		return admission{}, status{http.StatusServiceUnavailable, "audit unavailable"}
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	version, hasVersion := q.Get("version"), q.Has("version")
	if err != nil || hasVersion && (len(q["version"]) != 1 || !versionForm.MatchString(version)) {
		return admission{}, status{http.StatusBadRequest, "bad version"}
	}
	if !g.checkOrigin(r) {
		return admission{}, status{code: http.StatusForbidden}
	}
	cfg := g.cfg() // its sub-protocols are checked here and its Upgrader answers
	if offered := websocket.Subprotocols(r); len(offered) > 0 && !slices.ContainsFunc(offered, func(p string) bool {
		return slices.Contains(cfg.Transport.Subprotocols, p)
	}) {
		return admission{}, status{http.StatusBadRequest, "unsupported sub-protocol"}
	}

	// A socket without a credential counts against MaxUnauthenticated,
	// and against its source's share of it, until it authenticates. An
	// upgrade with an Authorization header counts against a bound of its
	// own, as large, while its token is verified (within Auth.Timeout): a
	// hung verifier holds no more requests than that, none longer than
	// Auth.Timeout, and sockets without a credential cannot keep clients
	// with one out.
	adm := admission{version: version, hasVersion: hasVersion, src: sourceKey(cfg.Hooks.ClientIP(r)), upgrader: cfg.upgrader}
	if g.auditing() {
		adm.sid = newSessionID()
	}
	h := r.Header.Values("Authorization")
	if len(h) == 0 {
		if !g.takeUnauth(adm.src) {
			return admission{}, status{code: http.StatusServiceUnavailable}
		}
		return adm, status{}
	}
	if !g.take(&g.places.verifying, "ws header verification bound reached") {
		return admission{}, status{code: http.StatusServiceUnavailable}
	}
	id, at, code := func() (*Identity, time.Time, int) {
		defer g.places.verifying.Add(-1)
		return g.headerAuth(r, h, adm.sid)
	}()
	if code != 0 {
		return admission{}, status{code: code}
	}
	adm.id, adm.at = id, at
	return adm, status{}
}

// giveBack gives back the unauthenticated place admit took for adm, if
// any: its upgrade failed, or Shutdown overtook it.
func (g *Gateway) giveBack(adm *admission) {
	if adm.id == nil {
		g.giveUnauth(adm.src)
	}
}

// take takes one of the MaxUnauthenticated places n counts; false, and
// msg logged, when none is left.
func (g *Gateway) take(n *atomic.Int64, msg string) bool {
	if n.Add(1) <= int64(g.cfg().Auth.MaxUnauthenticated) {
		return true
	}
	n.Add(-1)
	g.log().Warn(msg, zap.Int("max", g.cfg().Auth.MaxUnauthenticated))
	return false
}

// takeUnauth takes one of the MaxUnauthenticated places for a socket
// from src (a sourceKey), within src's share, MaxUnauthenticated/16 (at
// least 1): one address, or one IPv6 /64, cannot take every place and
// keep the clients that authenticate by an Auth message (every browser:
// it cannot set an Authorization header) out. false, logged, when none is
// left.
func (g *Gateway) takeUnauth(src string) bool {
	if !g.take(&g.places.unauth, "ws unauthenticated socket bound reached") {
		return false
	}
	g.places.mu.Lock()
	defer g.places.mu.Unlock()
	if g.places.bySource[src] >= max(g.cfg().Auth.MaxUnauthenticated/16, 1) {
		g.places.unauth.Add(-1)
		g.log().Warn("ws unauthenticated socket bound of one source reached", zap.String("source", src))
		return false
	}
	g.places.bySource[src]++
	return true
}

// addUnauth counts a socket from src as unauthenticated without a bound
// (one whose Authorization header was accepted, until authenticate gives
// its place back).
func (g *Gateway) addUnauth(src string) {
	g.places.unauth.Add(1)
	g.places.mu.Lock()
	g.places.bySource[src]++
	g.places.mu.Unlock()
}

// giveUnauth gives back a place takeUnauth or addUnauth took.
func (g *Gateway) giveUnauth(src string) {
	g.places.unauth.Add(-1)
	g.places.mu.Lock()
	uncount(g.places.bySource, src)
	g.places.mu.Unlock()
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
// one step, under places.mu: a burst of authentications cannot pass the limit.
func (g *Gateway) enterUser(subject string, limit int) bool {
	g.places.mu.Lock()
	defer g.places.mu.Unlock()
	if g.places.users[subject] >= limit {
		return false
	}
	g.places.users[subject]++
	return true
}

// leaveUser uncounts a session enterUser counted.
func (g *Gateway) leaveUser(subject string) {
	g.places.mu.Lock()
	uncount(g.places.users, subject)
	g.places.mu.Unlock()
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
// <token>" with Provider Bearer (any case, RFC 7235), within Auth.Timeout,
// and says when it asked the verifier. status is 0 when it is accepted,
// else the HTTP status to answer.
func (g *Gateway) headerAuth(r *http.Request, h []string, sid string) (*Identity, time.Time, int) {
	m := g.cfg().Hooks.Metrics
	scheme, token, ok := strings.Cut(h[0], " ")
	token = strings.TrimLeft(token, " ")
	if len(h) != 1 || !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || len(token) > g.cfg().Auth.MaxTokenBytes {
		m.Auth(AuthHeader, AuthResultNo)
		g.log().Info("ws authentication", zap.String("method", string(AuthHeader)), zap.String("result", AuthResultNo),
			zap.String("reason", "malformed authorization header"), zap.String("remote", g.cfg().Hooks.ClientIP(r)))
		g.auditHeader(sid, AuthResultNo, "malformed authorization header", nil)
		return nil, time.Time{}, http.StatusForbidden
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg().Auth.Timeout)
	defer cancel()
	at := time.Now()
	id, err := g.cfg().Hooks.Verifier.VerifyAccessToken(ctx, token)
	if err != nil {
		if errors.Is(err, ErrRefused) {
			m.Auth(AuthHeader, AuthResultNo)
			g.log().Info("ws authentication", zap.String("method", string(AuthHeader)), zap.String("result", AuthResultNo),
				zap.String("reason", refusalReason(err)), zap.String("remote", g.cfg().Hooks.ClientIP(r)))
			g.auditHeader(sid, AuthResultNo, refusalReason(err), nil)
			return nil, time.Time{}, http.StatusForbidden
		}
		m.Auth(AuthHeader, AuthResultErr)
		g.log().Error("ws token verification failed", zap.Error(err))
		g.auditHeader(sid, AuthResultErr, "verifier fault", nil)
		return nil, time.Time{}, http.StatusServiceUnavailable
	}
	if !id.Expiry.IsZero() && !id.Expiry.After(g.cfg().Hooks.Now()) {
		m.Auth(AuthHeader, AuthResultNo)
		g.auditHeader(sid, AuthResultNo, "expired", &id)
		return nil, time.Time{}, http.StatusForbidden
	}
	id.Token = token
	m.Auth(AuthHeader, AuthResultOK)
	g.log().Info("ws authentication", zap.String("method", string(AuthHeader)), zap.String("result", AuthResultOK),
		zap.String("user", id.Subject), zap.String("client_id", id.ClientID), zap.String("remote", g.cfg().Hooks.ClientIP(r)))
	g.auditHeader(sid, AuthResultOK, "", &id)
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
	if len(g.cfg().Transport.AllowedOrigins) == 0 {
		o := origin[0]
		_, host, ok := strings.Cut(o, "://")
		return ok && strings.EqualFold(host, r.Host)
	}
	for _, a := range g.cfg().Transport.AllowedOrigins {
		if a == "*" || a == strings.TrimSuffix(origin[0], "/") {
			return true
		}
	}
	return false
}
