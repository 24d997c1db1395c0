package wshandler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/wsauth"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// DefaultReloadDelay is how long live sockets stay up after a reload
// before they are closed with 1012 (restart: reconnect).
const DefaultReloadDelay = 30 * time.Second

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
// A socket is an HTTP/1.1 upgrade (RFC 6455): gorilla's Upgrader hijacks
// the connection. The gateway does not accept WebSockets over extended
// CONNECT (RFC 8441 on HTTP/2, RFC 9220 on HTTP/3); instead the site must
// not advertise it on HTTP/2, so that browsers open the socket on its own
// HTTP/1.1 connection. On a site with Caddy's default protocols (h1 h2 h3)
// over TLS, with Go 1.26, Caddy v2.11.9, golang.org/x/net v0.60.0 and
// quic-go v0.63.0:
//
//   - HTTP/2 does not advertise it. Caddy serves HTTP/2 with
//     golang.org/x/net/http2 (caddyhttp/app.go:534,
//     http2.ConfigureServer), whose server sends
//     SETTINGS_ENABLE_CONNECT_PROTOCOL only when
//     disableExtendedConnectProtocol is false (x/net http2/server.go:787);
//     it is true by default (http2/http2.go:42-49, golang/go#71128) and
//     false only when the GODEBUG environment variable contains
//     http2xconnect=1 (http2/http2.go:62). Go 1.26's own net/http HTTP/2
//     has the same default and switch (net/http/h2_bundle.go:3495,3508,
//     4923), which x/net's server wraps from Go 1.27 (http2/server_wrap.go).
//     Provision refuses to start when GODEBUG has http2xconnect=1; the TLS
//     test reads the server's SETTINGS, so a change of default shows.
//   - An HTTP/2 request never reaches the handler as an upgrade: a
//     Connection or Upgrade header gets 400 from the HTTP/2 server
//     (http2/server.go:1987, 3169), an unadvertised :protocol gets
//     RST_STREAM PROTOCOL_ERROR (http2/server.go:2147). Were it
//     advertised, an extended CONNECT would reach the handler as a CONNECT
//     with the header ":protocol" (http2/server.go:2179).
//   - HTTP/3 always advertises it: quic-go's server puts ExtendedConnect
//     true in its SETTINGS (quic-go http3/server.go:504), and neither
//     quic-go nor Caddy's http3.Server (caddyhttp/server.go:1085) can turn
//     it off short of turning HTTP/3 off (the servers' protocols option,
//     e.g. h1 h2). An extended CONNECT reaches the handler as a CONNECT
//     whose Proto is the :protocol ("websocket", ProtoMajor 3; quic-go
//     http3/headers.go:310); Connection and Upgrade are refused by quic-go
//     before any handler (http3/headers.go:174).
//
// ServeHTTP answers every request that is not HTTP/1.x (an HTTP/2 or
// HTTP/3 GET, an extended CONNECT) with 400, a body saying a WebSocket
// needs HTTP/1.1: no panic, no hang, no half-open stream. A client that
// opens WebSockets over HTTP/3 (RFC 9220) therefore fails here (it would
// need the gateway to speak WebSocket over the stream, or HTTP/3 off); the
// browsers we know of do not use RFC 9220, and open wss:// over HTTP/1.1,
// or over HTTP/2 only where it is advertised.
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
	// Default false.
	DisableCompression bool `json:"disable_compression,omitempty"`

	// MaxMessageSize bounds a client message after decompression, in
	// bytes; a larger one closes the socket with 1009. Default 1 MiB.
	MaxMessageSize int64 `json:"max_message_size,omitempty"`

	// AuthTimeout is how long a socket may stay unauthenticated (then
	// 1008). Default 10s.
	AuthTimeout caddy.Duration `json:"auth_timeout,omitempty"`

	// AuthMaxMessages is how many messages an unauthenticated socket may
	// send. Default 10.
	AuthMaxMessages int `json:"auth_max_messages,omitempty"`

	// MaxUnauthenticated bounds the sockets open without authentication.
	// Default: wsauth's.
	MaxUnauthenticated int `json:"max_unauthenticated,omitempty"`

	// PingInterval is the keep-alive ping period. Default 30s.
	PingInterval caddy.Duration `json:"ping_interval,omitempty"`

	// IdleTimeout closes (1008) a client silent this long. Default 60s.
	IdleTimeout caddy.Duration `json:"idle_timeout,omitempty"`

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
	Policy *wsauth.PolicyConfig `json:"policy,omitempty"`

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

	// PassAuthorization passes the session's access token to the backend
	// as "Authorization: Bearer <token>". Default false.
	PassAuthorization bool `json:"pass_authorization,omitempty"`

	// ReloadDelay is how long live sockets stay up after a config reload
	// before they are closed with 1012 (the client reconnects). Default
	// 30s.
	ReloadDelay caddy.Duration `json:"reload_delay,omitempty"`

	gw     *wsauth.Gateway
	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.gatehouse_ws",
		New: func() caddy.Module { return new(Handler) },
	}
}

// defaultHeaders are the identity headers when none are configured.
var defaultHeaders = map[string][]string{
	"X-Gatehouse-User-Id":   {"{http.auth.user.id}"},
	"X-Gatehouse-User-Name": {"{http.auth.user.name}"},
	"X-Gatehouse-Scopes":    {"{http.auth.user.scopes}"},
	"X-Gatehouse-Client-Id": {"{http.auth.user.client_id}"},
}

// config converts the handler's fields into the gateway's configuration,
// without the parts only Provision has (verifier, passwords, logger).
func (h *Handler) config() (wsauth.Config, error) {
	cfg := wsauth.Config{
		Upstreams: h.Upstreams, Subprotocols: h.Subprotocols, AllowedOrigins: h.AllowedOrigins,
		DisableCompression: h.DisableCompression, MaxMessageBytes: h.MaxMessageSize,
		AuthTimeout: time.Duration(h.AuthTimeout), AuthMaxMessages: h.AuthMaxMessages,
		MaxUnauthenticated: h.MaxUnauthenticated, PingInterval: time.Duration(h.PingInterval),
		IdleTimeout: time.Duration(h.IdleTimeout), ReturnAccessToken: h.ReturnAccessToken,
		Profile: wsauth.Profile{Vendor: h.Vendor, Motif: h.Motif},
	}
	if h.Policy != nil {
		if err := h.Policy.Validate(); err != nil {
			return cfg, fmt.Errorf("gatehouse_ws: policy: %w", err)
		}
		p, err := wsauth.NewPolicy(*h.Policy)
		if err != nil {
			return cfg, fmt.Errorf("gatehouse_ws: policy: %w", err)
		}
		cfg.Policy = p
	}
	headers := h.Headers
	if headers == nil {
		headers = defaultHeaders
	}
	policy, err := verify.NewHeaderPolicy(headers, nil, false)
	if err != nil {
		return cfg, fmt.Errorf("gatehouse_ws: headers: %w", err)
	}
	pass := h.PassAuthorization
	cfg.BackendHeaders = func(hdr http.Header, id wsauth.Identity) {
		policy.Apply(hdr, identityExpander(id))
		if pass && id.Token != "" {
			hdr.Set("Authorization", "Bearer "+id.Token)
		}
	}
	return cfg, nil
}

// identityExpander expands the identity placeholders of a header template.
func identityExpander(id wsauth.Identity) func(string) string {
	repl := caddy.NewReplacer()
	repl.Set("http.auth.user.id", id.Subject)
	repl.Set("http.auth.user.client_id", id.ClientID)
	repl.Set("http.auth.user.name", id.DisplayName)
	repl.Set("http.auth.user.scopes", strings.Join(id.Scopes, " "))
	if !id.Expiry.IsZero() {
		repl.Set("http.auth.user.exp", strconv.FormatInt(id.Expiry.Unix(), 10))
	}
	return func(template string) string { return repl.ReplaceAll(template, "") }
}

// Validate checks the configuration. It changes nothing.
func (h *Handler) Validate() error {
	cfg, err := h.config()
	if err != nil {
		return err
	}
	cfg.Verifier = nopVerifier{} // Provision fills the real one
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("gatehouse_ws: %w", err)
	}
	if h.ReloadDelay < 0 {
		return errors.New("gatehouse_ws: reload_delay must not be negative")
	}
	return nil
}

// Provision builds the gateway over the gatehouse app's verifier and, when
// the app has an identity server, its password grant for AuthOwner.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	if err := checkNoExtendedConnect(os.Getenv("GODEBUG")); err != nil {
		return err
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
	cfg.Verifier = verifierAdapter{v: v}
	if srv := app.Server(); srv != nil {
		cfg.Passwords = ownerAdapter{srv: srv, v: v}
	}
	if err := registerMetrics(ctx); err != nil {
		return err
	}
	cfg.Metrics = metrics{}
	cfg.Logger = h.logger
	if h.gw, err = wsauth.New(cfg); err != nil {
		return fmt.Errorf("gatehouse_ws: %w", err)
	}
	return nil
}

// ServeHTTP hands HTTP/1.x requests to the gateway and answers any other
// (an HTTP/2 or HTTP/3 request, an extended CONNECT among them) with 400:
// a WebSocket here is an HTTP/1.1 upgrade (see HTTP/2 and HTTP/3 in the
// Handler's doc).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	if r.ProtoMajor != 1 {
		h.logger.Debug("ws request over HTTP/2 or HTTP/3 refused",
			zap.String("proto", r.Proto), zap.Int("proto_major", r.ProtoMajor),
			zap.String("method", r.Method), zap.String("remote", r.RemoteAddr))
		http.Error(w, errNeedsHTTP1, http.StatusBadRequest)
		return nil
	}
	h.gw.ServeHTTP(w, r)
	return nil
}

// errNeedsHTTP1 is the body of the answer to a request over HTTP/2 or
// HTTP/3.
const errNeedsHTTP1 = "websocket upgrade required over HTTP/1.1 (no WebSocket over HTTP/2 or HTTP/3 here)"

// checkNoExtendedConnect refuses a process whose GODEBUG turns HTTP/2
// extended CONNECT on (http2xconnect=1, read from the environment by
// golang.org/x/net/http2 and net/http at start-up): its sites would then
// advertise SETTINGS_ENABLE_CONNECT_PROTOCOL, and browsers would open the
// gateway's sockets over HTTP/2, which it refuses.
func checkNoExtendedConnect(godebug string) error {
	// The same test as theirs (x/net/http2/http2.go:62), so that it
	// agrees with them on every value.
	if strings.Contains(godebug, "http2xconnect=1") {
		return errors.New("gatehouse_ws: GODEBUG has http2xconnect=1, which makes HTTP/2 advertise extended CONNECT (RFC 8441): " +
			"browsers would then send WebSockets over HTTP/2, and the gateway accepts them only over HTTP/1.1; unset it")
	}
	return nil
}

// Cleanup closes the live sockets: at once with 1001 when the process
// exits, after ReloadDelay with 1012 on a config reload (the new config's
// handler takes the reconnecting clients).
func (h *Handler) Cleanup() error {
	if h.gw == nil {
		return nil
	}
	if caddy.Exiting() {
		h.gw.Shutdown(1001)
		return nil
	}
	delay := time.Duration(h.ReloadDelay)
	if delay == 0 {
		delay = DefaultReloadDelay
	}
	gw := h.gw
	time.AfterFunc(delay, func() { gw.Shutdown(1012) })
	return nil
}

// verifierAdapter is the app's verifier as the gateway's Verifier.
type verifierAdapter struct{ v *verify.Verifier }

func (a verifierAdapter) VerifyAccessToken(ctx context.Context, token string) (wsauth.Identity, error) {
	id, err := a.v.Verify(ctx, token)
	if err != nil {
		if ve, ok := errors.AsType[*verify.Error](err); ok && ve.Reason != verify.ReasonKeysUnavailable {
			return wsauth.Identity{}, &wsauth.Refusal{Reason: string(ve.Reason), Cause: err}
		}
		return wsauth.Identity{}, err
	}
	name, _ := id.Claims()["name"].(string)
	return wsauth.Identity{Subject: id.Subject, ClientID: id.ClientID, DisplayName: name,
		Scopes: id.Scopes, Expiry: id.Expiry, Token: token}, nil
}

// ownerAdapter answers AuthOwner with the identity server's password
// grant (client authentication, the grant check and the brute-force
// defence included), then verifies the access token it issued.
type ownerAdapter struct {
	srv *identity.Server
	v   *verify.Verifier
}

func (a ownerAdapter) CheckOwner(ctx context.Context, cred wsauth.OwnerCredentials) (wsauth.Identity, error) {
	source := cred.RemoteAddr
	if host, _, err := net.SplitHostPort(source); err == nil {
		source = host
	}
	resp, perr := a.srv.PasswordGrant(ctx, cred.ClientID, cred.ClientSecret, cred.Username, cred.Password, "", source)
	if perr != nil {
		if perr.Code == "server_error" || perr.Code == "temporarily_unavailable" {
			return wsauth.Identity{}, perr
		}
		return wsauth.Identity{}, &wsauth.Refusal{Reason: perr.Code}
	}
	return verifierAdapter{v: a.v}.VerifyAccessToken(ctx, resp.AccessToken)
}

// nopVerifier stands in for the verifier in Validate, which builds no
// gateway.
type nopVerifier struct{}

func (nopVerifier) VerifyAccessToken(context.Context, string) (wsauth.Identity, error) {
	return wsauth.Identity{}, wsauth.ErrRefused
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ wsauth.Verifier             = verifierAdapter{}
	_ wsauth.PasswordChecker      = ownerAdapter{}
)
