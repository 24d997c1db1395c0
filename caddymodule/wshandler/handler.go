package wshandler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/wsauth"
	"github.com/gatehouse/gatehouse/wsauth/policy"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler is the message gateway (http.handlers.gatehouse_ws): it upgrades
// requests to WebSockets, authenticates each socket with the gatehouse
// app's verifier (an Authorization header on the upgrade, or Auth
// messages), authorizes every message by Controller/Topic and scope, and
// relays to the backend, which sees nothing of an unauthenticated client.
// It needs the gatehouse app. Requests that are not WebSocket upgrades get
// 400.
//
// # HTTP/2 and HTTP/3
//
// A socket opens with an HTTP/1.1 upgrade (RFC 6455) or with an extended
// CONNECT (RFC 8441 on HTTP/2, RFC 9220 on HTTP/3); the gateway takes
// both, and both run the same checks and the same session (wsauth,
// xconnect.go). On a site with Caddy's default protocols (h1 h2 h3) over
// TLS, with Go 1.26, Caddy v2.11.9, golang.org/x/net v0.60.0 and quic-go
// v0.63.0:
//
//   - HTTP/3 always advertises extended CONNECT: quic-go's server puts
//     ExtendedConnect true in its SETTINGS (quic-go http3/server.go:504),
//     and neither quic-go nor Caddy's http3.Server can turn it off short of
//     turning HTTP/3 off. An extended CONNECT reaches the handler as a
//     CONNECT whose Proto is the :protocol ("websocket", ProtoMajor 3;
//     http3/headers.go:310), and the gateway answers 200 and speaks
//     WebSocket over the request stream.
//   - HTTP/2 does not advertise it by default: Go's HTTP/2 server sends
//     SETTINGS_ENABLE_CONNECT_PROTOCOL only when the GODEBUG environment
//     variable has http2xconnect=1 (net/http/h2_bundle.go:3495,3508,
//     golang/go#71128), so browsers open wss:// on HTTP/1.1. With that
//     setting an extended CONNECT reaches the handler as a CONNECT with the
//     header ":protocol" (h2_bundle.go:6260) and is served as on HTTP/3.
//   - A plain HTTP/2 or HTTP/3 request gets 400 with a body naming the
//     extended CONNECT; one with Connection or Upgrade headers is refused
//     by the HTTP/2 or HTTP/3 server before any handler.
//
// The TLS tests open sockets over all three and read each server's
// SETTINGS, so a change of default shows.
type Handler struct {
	// Upstreams are the backend's WebSocket URLs (ws:// or wss://), tried
	// in order (failover). Required.
	Upstreams []string `json:"upstreams,omitempty"`

	// Subprotocols are the accepted sub-protocols, in order of preference.
	// Default ["ServiceJson"].
	Subprotocols []string `json:"subprotocols,omitempty"`

	// AllowedOrigins are the browser origins (scheme://host[:port]) that
	// may open a socket; "*" allows any (risky: any page a user visits
	// could then open one). Default: only the request's own host.
	AllowedOrigins []string `json:"allowed_origins,omitempty"`

	// DisableCompression turns permessage-deflate off on the client leg.
	// Default false: accepted when the client offers it (every browser
	// does), each message to the client compressed alone, and only where
	// that pays (at least 128 bytes, and while compression saves at least
	// an eighth of the session's recent messages); a message carrying the
	// access token never.
	DisableCompression bool `json:"disable_compression,omitempty"`

	// MaxMessageBytes bounds a client message after decompression, in
	// bytes; a larger one closes the socket with 1009. Default 1 MiB.
	MaxMessageBytes int64 `json:"max_message_bytes,omitempty"`

	// MaxMessageSize is the deprecated name of MaxMessageBytes, still
	// read (with a warning) when MaxMessageBytes is not set.
	MaxMessageSize int64 `json:"max_message_size,omitempty"`

	// SendQueueBytes bounds, per session, the bytes of the messages waiting
	// to be written to the client (beyond what the socket's buffers hold);
	// a client that falls further behind is closed with 1008 and counted in
	// gatehouse_ws_slow_clients_total. With SendQueue, what one client that
	// does not read can cost the gateway. Default 4 MiB.
	SendQueueBytes int64 `json:"send_queue_bytes,omitempty"`

	// SendQueue bounds, per session, the messages waiting to be written to
	// the client, likewise. Default 256.
	SendQueue int `json:"send_queue,omitempty"`

	// AuthTimeout is how long a socket may stay unauthenticated (then
	// 1008). Default 10s.
	AuthTimeout caddy.Duration `json:"auth_timeout,omitempty"`

	// AuthMaxMessages is how many messages an unauthenticated socket may
	// send. Default 10.
	AuthMaxMessages int `json:"auth_max_messages,omitempty"`

	// MaxUnauthenticated bounds the sockets open without authentication,
	// and apart the upgrades whose Authorization header is being verified
	// (each within auth_timeout). One client address (an IPv6 /64; Caddy's
	// client IP, so trusted_proxies apply) holds at most a sixteenth of
	// the first. Default 1024.
	MaxUnauthenticated int `json:"max_unauthenticated,omitempty"`

	// PingInterval is the keep-alive ping period on both legs: the
	// gateway pings the client and the backend this often. Default 30s.
	PingInterval caddy.Duration `json:"ping_interval,omitempty"`

	// IdleTimeout closes (1008) a client silent this long, pongs
	// included; a backend leg silent this long is lost, and its client
	// closed with 1011. Default 60s; it must exceed ping_interval.
	IdleTimeout caddy.Duration `json:"idle_timeout,omitempty"`

	// BackendMessageTimeout bounds how long one backend message may take
	// to arrive, first frame to last: a backend that stalls mid-message
	// holds its buffer (up to 16 MiB) no longer; the client is closed with
	// 1011. Default 30s.
	BackendMessageTimeout caddy.Duration `json:"backend_message_timeout,omitempty"`

	// Readiness names this handler's check in the readiness probe
	// (gatehouse_health ready): a TCP connection to one of its upstreams.
	// Default "message_backend" (message_backend_2 for a second handler, and
	// so on).
	Readiness string `json:"readiness,omitempty"`

	// ReadinessOptional reports the backend's check without making the
	// instance not ready when it fails: an outage of a shared market-data
	// backend need not take the identity server out of a balancer.
	ReadinessOptional bool `json:"readiness_optional,omitempty"`

	// ReturnAccessToken lists the OAuth client ids whose sessions get
	// their access token back (Base-64) in Identify replies, so the
	// client can save it (the original web client needs it); "*" means
	// every client. Default none.
	ReturnAccessToken []string `json:"return_access_token,omitempty"`

	// Vendor is the first part of each Scope entry of an Identify reply
	// ("<vendor>.Service.<Area>"). Default "Gatehouse".
	Vendor string `json:"vendor,omitempty"`

	// Motif spells the Auth replies as the original web client (motif-core)
	// expects: reply Topic AuthToken, Result "Rejected", ExpiresIn. Default
	// false: the documented form.
	Motif bool `json:"motif,omitempty"`

	// Policy extends or replaces the Controller/Topic -> scope table.
	// Default: the protocol's table.
	Policy *policy.Config `json:"policy,omitempty"`

	// Entitlements turns on the market-data entitlement check: each
	// message's venue (where the venue table says a topic names it) must
	// be one whose feed the token's authorization_details hold, or the
	// message is answered Error/Authority. Its rules extend or replace
	// the default venue table; its venues list, per feed, the venues the
	// backend serves (what a topic spanning venues needs them all of).
	// Default: no entitlement check, every venue open to the scopes.
	// docs/entitlements.md has the table and the grammar.
	Entitlements *policy.VenueConfig `json:"entitlements,omitempty"`

	// Headers are the identity headers of the backend leg's upgrade,
	// each from templates with the placeholders {http.auth.user.id},
	// {http.auth.user.client_id}, {http.auth.user.name},
	// {http.auth.user.scopes} and {http.auth.user.exp}. Client-sent copies
	// never reach the backend (the backend leg is a new request). Default
	// X-Gatehouse-User-Id, X-Gatehouse-User-Name, X-Gatehouse-Scopes and
	// X-Gatehouse-Client-Id. They describe the session at its start: a
	// backend must not authorize from them (the gateway authorizes each
	// message).
	Headers map[string][]string `json:"headers,omitempty"`

	// RecheckInterval is how often a live session's token is verified
	// again, so that a revoked token, refresh family or user ends the
	// session's authority within it (plus the verifier's revocation
	// refresh, 5s). Besides, every live session is verified again as soon
	// as the verifier reads a new revocation: at once for one made on this
	// instance or, on a PostgreSQL store with notices, on any other.
	// Default 3s.
	RecheckInterval caddy.Duration `json:"recheck_interval,omitempty"`

	// ExpiryGrace is how long a session whose authority lapsed (expiry,
	// revocation) stays open for a fresh AuthToken, its subscriptions
	// paused at the backend, before it is closed with 1008. Default 5m.
	ExpiryGrace caddy.Duration `json:"expiry_grace,omitempty"`

	// Limits are each session's entitlement limits: live subscriptions,
	// messages per second and burst (over a limit a message is answered
	// Error/Limited and not forwarded), and the live sessions of one user
	// on this instance (an authentication past it is refused). Defaults:
	// 500 subscriptions, 50 messages/s, burst 100, 64 sessions.
	Limits *policy.Limits `json:"limits,omitempty"`

	// LimitOverrides raise the limits of the sessions of one OAuth client
	// or holding one scope; a session gets the largest that apply.
	LimitOverrides []policy.LimitOverride `json:"limit_overrides,omitempty"`

	// TransactionIDs is the backend's TransactionID type: "int53" (the
	// default: the integers a double holds exactly, as JavaScript and the
	// web client have them) or "int32" (a backend that reads a 32-bit
	// int). A client's TransactionID outside it is refused with
	// Error/Data.Deserialise; the gateway's own messages (the Unsubs that
	// end a lapsed session's or a lost scope's subscriptions) take theirs
	// from a reserved range inside it, 9007199254000000 up or -2^31 to
	// -2147400000, which clients may not use. A backend that cannot read
	// them would keep such a subscription open.
	TransactionIDs string `json:"transaction_ids,omitempty"`

	// BackendCompression offers permessage-deflate to the backend, each
	// message compressed alone (server_no_context_takeover and
	// client_no_context_takeover). A backend that accepts may send its
	// messages compressed: the gateway reads each one decompressed (the
	// backend message bound, 16 MiB, applies to it decompressed, so a
	// decompression bomb closes the backend leg with 1009 and the client
	// with 1011) and checks it as any other, and passes it to a client that
	// negotiated permessage-deflate as the backend compressed it, without
	// compressing it again, where the client's window holds it (on a ws://
	// upstream; over wss:// the client gets it as the gateway compresses
	// messages itself). A backend answer that keeps its context between
	// messages, or names parameters not offered, fails the dial. The
	// gateway compresses nothing it sends the backend. Default false: no
	// extension offered, and a compressed backend frame closes the leg
	// (1002; the client gets 1011).
	BackendCompression bool `json:"backend_compression,omitempty"`

	// RequireTLS withholds WithheldScopes (default Service/Trading and
	// Service/OrderPad) on connections without TLS, as the original
	// platform does. Behind a TLS-ending proxy, X-Forwarded-Proto: https
	// counts only from the server's trusted_proxies. Default false.
	RequireTLS bool `json:"require_tls,omitempty"`

	// WithheldScopes are the scopes RequireTLS withholds, in place of the
	// default Service/Trading and Service/OrderPad. Each must be a scope a
	// rule of the message policy requires or a limit override names (else
	// it is refused as a likely misspelling), and require_tls set.
	WithheldScopes []string `json:"withheld_scopes,omitempty"`

	// PassAuthorization passes the session's access token to the backend
	// as "Authorization: Bearer <token>". Default false.
	PassAuthorization bool `json:"pass_authorization,omitempty"`

	// Name tells this handler's sessions apart across reloads from those of
	// the server's other gatehouse_ws handlers: a reload keeps a session
	// when the new config has a handler on the same server with the same
	// name and the same upstreams and transport settings. Default: the
	// handler's position among the server's gatehouse_ws handlers, which
	// adding or moving one changes. A changed route matcher is not seen.
	Name string `json:"name,omitempty"`

	// DrainWindow is how long the gateway takes to close its sessions with
	// 1012 (restart: reconnect) when a reload cannot keep them (the
	// handler is gone, or its upstreams or transport settings changed) and
	// when the process stops, one after another, spread evenly, so that
	// reconnecting clients reach the backend a few at a time. New upgrades
	// get 503 meanwhile. Default 10s: with the last close's write and
	// answer, within the shipped systemd unit's stop timeout and
	// Kubernetes' default grace period (30s each). A longer window needs
	// a longer stop timeout (TimeoutStopSec, terminationGracePeriodSeconds).
	DrainWindow caddy.Duration `json:"drain_window,omitempty"`

	// ReloadDelay is the deprecated name of DrainWindow, still read (with
	// a warning) when DrainWindow is not set.
	ReloadDelay caddy.Duration `json:"reload_delay,omitempty"`

	// TraceSubject puts the subject (the token's sub, a user id) on a
	// socket's spans when Caddy's tracing directive traces its upgrade;
	// the client (client_id) is always there. Default false: traces are
	// often kept longer, and read by more people, than the audit log.
	// Never a token, a secret nor a message's content either way
	// (docs/operations.md, "Traces").
	TraceSubject bool `json:"trace_subject,omitempty"`

	gw     *wsauth.Gateway
	shared *shared           // gw in gateways; nil while validating
	key    string            // shared's key
	server *caddyhttp.Server // the server the handler is provisioned on
	// tallied is the context of h's configuration, under which h is
	// counted in the reload's log line (reload_tally.go); nil before.
	tallied context.Context
	logger  *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.gatehouse_ws",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Validate checks the configuration. It changes nothing.
func (h *Handler) Validate() error {
	cfg, err := h.config()
	if err != nil {
		return err
	}
	cfg.Hooks.Verifier = nopVerifier{} // Provision fills the real one
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("gatehouse_ws: %w", err)
	}
	if h.ReloadDelay < 0 {
		return errors.New("gatehouse_ws: reload_delay must not be negative")
	}
	if h.DrainWindow < 0 {
		return errors.New("gatehouse_ws: drain_window must not be negative")
	}
	return nil
}

// Provision builds the gateway over the gatehouse app's verifier and, when
// the app has an identity server, its password grant for AuthOwner and its
// code exchange for AuthCode.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	if h.MaxMessageSize != 0 {
		h.logger.Warn("gatehouse_ws: max_message_size is deprecated: it is max_message_bytes now")
	}
	if h.ReloadDelay != 0 {
		h.logger.Warn("gatehouse_ws: reload_delay is deprecated: it is drain_window now")
	}
	cfg, err := h.config()
	if err != nil {
		return err
	}
	appIface, err := ctx.AppIfConfigured("gatehouse")
	if err != nil {
		return fmt.Errorf("gatehouse_ws needs the gatehouse app (the gatehouse global option): %w", err)
	}
	app := appIface.(*caddymodule.App)
	v := app.Verifier()
	if v == nil {
		return errors.New("gatehouse_ws: the gatehouse app has no verifier")
	}
	cfg.Hooks.Verifier = verifierAdapter{v: v}
	// A revocation read by the verifier (at its poll, or at once on a
	// notice from a shared store) has the live sessions checked again.
	cfg.Hooks.RevocationsChanged = v.RevocationsChanged
	if srv := app.Server(); srv != nil {
		cfg.Hooks.Passwords = ownerAdapter{srv: srv, v: v}
		cfg.Hooks.Codes = codeAdapter{srv: srv, v: v}
	}
	if err := registerMetrics(ctx); err != nil {
		return err
	}
	cfg.Hooks.Metrics = metrics{}
	cfg.Hooks.Logger = h.logger
	if w := app.AuditWriter(); w != nil { // a nil *audit.Writer would be a non-nil Auditor
		cfg.Hooks.Audit = w
	}
	if err := h.provisionGateway(ctx, cfg); err != nil {
		return err
	}
	app.AddReadinessCheck(cmp.Or(h.Readiness, "message_backend"), !h.ReadinessOptional, h.gw.CheckBackend)
	return nil
}

// ServeHTTP hands every request to the gateway, which upgrades HTTP/1.1
// upgrades and extended CONNECTs alike (see HTTP/2 and HTTP/3 in the
// Handler's doc).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	h.gw.ServeHTTP(w, r)
	return nil
}

// Cleanup lets go of the gateway. A gateway the new config's handler took
// goes on with its sessions; one no handler holds any more is drained
// (gateways): its sessions closed with 1012 spread over the drain window,
// new upgrades refused with 503; when the process exits, Cleanup returns
// once they are closed.
func (h *Handler) Cleanup() error {
	if h.server != nil {
		positionsMu.Lock()
		delete(positions, h.server)
		positionsMu.Unlock()
	}
	if h.shared == nil {
		if h.gw != nil { // validating
			h.gw.Shutdown(websocket.CloseGoingAway)
		}
		return nil
	}
	err := h.shared.release(h)
	if _, derr := gateways.Delete(h.key); derr != nil {
		err = errors.Join(err, derr)
	}
	h.shared = nil
	tallyLeave(h.tallied)
	return err
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ wsauth.Verifier             = verifierAdapter{}
	_ wsauth.PasswordChecker      = ownerAdapter{}
	_ wsauth.CodeExchanger        = codeAdapter{}
)
