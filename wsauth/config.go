package wsauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// Defaults of the gateway's limits (issue 8, "Limits"; docs/protocol.md,
// "Transport"). A zero Config field means its default.
const (
	// DefaultSubprotocol is the sub-protocol negotiated when Config names
	// none (docs/api-surface.md §9).
	DefaultSubprotocol = "ServiceJson"
	// DefaultMaxMessageBytes bounds one client message, counted after
	// permessage-deflate decompression.
	DefaultMaxMessageBytes = 1 << 20
	// DefaultMaxBackendMessageBytes bounds one backend message.
	DefaultMaxBackendMessageBytes = 16 << 20
	// DefaultAuthTimeout is how long an unauthenticated socket may stay
	// open.
	DefaultAuthTimeout = 10 * time.Second
	// DefaultAuthMaxMessages is how many messages an unauthenticated
	// socket may send; the next closes it.
	DefaultAuthMaxMessages = 10
	// DefaultMaxUnauthenticated bounds the sockets open and not yet
	// authenticated, and apart the header verifications under way; an
	// upgrade over it gets HTTP 503.
	DefaultMaxUnauthenticated = 1024
	// DefaultPingInterval is how often the gateway pings the client.
	DefaultPingInterval = 30 * time.Second
	// DefaultIdleTimeout: a client silent (no message, no pong) this long
	// is closed with 1008.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultBackendMessageTimeout bounds the arrival of one backend
	// message, first frame to last.
	DefaultBackendMessageTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds one write to the client or the backend.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultSendQueue bounds the messages waiting for a client.
	DefaultSendQueue = 256
	// DefaultSendQueueBytes bounds the bytes waiting for a client.
	DefaultSendQueueBytes = 4 << 20
	// DefaultDialTimeout bounds one attempt to open the backend leg.
	DefaultDialTimeout = 5 * time.Second
	// DefaultCloseGrace is how long the gateway waits for the client's
	// answer to its close frame before dropping the connection.
	DefaultCloseGrace = 2 * time.Second
	// DefaultCloseLinger is how long, at least, a client socket whose close
	// frame went unanswered stays half-closed, its input discarded, before it
	// is closed (nginx's lingering_time); longer when IdleTimeout and
	// PingInterval are: a client may be that far behind and still connected.
	DefaultCloseLinger = 30 * time.Second
	// DefaultSuperviseInterval is how often the gateway's supervisor
	// walks the live sessions.
	DefaultSuperviseInterval = time.Second
	// DefaultRecheckInterval is how often a live session's access token
	// is verified again.
	DefaultRecheckInterval = 3 * time.Second
	// DefaultExpiryGrace is how long a session whose authority lapsed
	// stays open for a fresh credential.
	DefaultExpiryGrace = 5 * time.Minute
)

// DefaultWithheldScopes are the scopes RequireTLS withholds on a
// connection without TLS: the original platform's Trading and OrderPad
// rights (docs/protocol.md, "Auth controller").
var DefaultWithheldScopes = []string{policy.ScopeTrading, policy.ScopeOrderPad}

// Config configures a Gateway. Zero fields take their Default*; Validate
// checks it without changing it, New fills the defaults into its own copy.
type Config struct {
	// Upstreams are the backend's WebSocket URLs (ws:// or wss://), tried
	// in order until one accepts (failover). Required. The client's
	// ?version= is added to the URL's query.
	Upstreams []string
	// Subprotocols are the sub-protocols the gateway accepts, in order of
	// preference; the one negotiated is asked of the backend too. Default
	// [DefaultSubprotocol]. A client that offers sub-protocols, none of
	// them listed, gets HTTP 400; one that offers none is accepted.
	Subprotocols []string
	// AllowedOrigins are the Origin values (scheme://host[:port]) whose
	// browsers may open a socket, compared exactly; "*" allows every
	// origin (risk: any web page may then use a visitor's cookies-free
	// socket, and with header auth nothing else stops it). Empty: only the
	// request's own host. A request without Origin (not a browser) is
	// always allowed.
	AllowedOrigins []string
	// DisableCompression turns off permessage-deflate on the client leg.
	// Default false (offered).
	DisableCompression bool
	// MaxMessageBytes bounds one client message after decompression; a
	// larger one closes the socket with 1009. Default
	// DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// MaxBackendMessageBytes bounds one backend message; a larger one
	// closes both legs (the client gets 1011). Default
	// DefaultMaxBackendMessageBytes.
	MaxBackendMessageBytes int64
	// MaxTokenBytes bounds an access token (header or AuthToken). Default
	// DefaultMaxTokenBytes.
	MaxTokenBytes int
	// AuthTimeout is how long a socket may stay unauthenticated before it
	// is closed with 1008. Default DefaultAuthTimeout.
	AuthTimeout time.Duration
	// AuthMaxMessages is how many messages an unauthenticated socket may
	// send; the next one closes it with 1008. Default
	// DefaultAuthMaxMessages.
	AuthMaxMessages int
	// MaxUnauthenticated bounds the sockets open without authentication,
	// and, apart, the upgrades whose Authorization header is being
	// verified (each within AuthTimeout). One source (an IPv4 address, an
	// IPv6 /64, as ClientIP gives it) holds at most a sixteenth of the
	// first (at least one). Default DefaultMaxUnauthenticated.
	MaxUnauthenticated int
	// PingInterval is the keep-alive ping period, on both legs: the
	// gateway pings the client and the backend this often. Default
	// DefaultPingInterval.
	PingInterval time.Duration
	// IdleTimeout closes (1008) a client that sent nothing, pongs
	// included, for this long, and one that has left a ping unanswered
	// this long (it does not read, whatever it sends; counted as a slow
	// client); a backend leg silent this long (its pongs included) is
	// lost, and its client closed with 1011. Default DefaultIdleTimeout; it
	// must exceed PingInterval.
	IdleTimeout time.Duration
	// BackendMessageTimeout bounds the time one backend message may take
	// to arrive, from its first frame to its last: a backend that stalls
	// mid-message (its pongs still coming) holds the message's buffer, up
	// to MaxBackendMessageBytes, no longer; its client is closed with
	// 1011. Default DefaultBackendMessageTimeout.
	BackendMessageTimeout time.Duration
	// WriteTimeout bounds one write to either leg; a client write that
	// times out closes the client (1008, counted as a slow client).
	// Default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// SendQueue and SendQueueBytes bound the messages and bytes waiting
	// for the client; past either the client is closed with 1008 and
	// counted as a slow client. Defaults DefaultSendQueue and
	// DefaultSendQueueBytes.
	SendQueue      int
	SendQueueBytes int64
	// DialTimeout bounds one attempt to open the backend leg. Default
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// CloseGrace is how long the gateway waits for the client to answer
	// its close frame. Default DefaultCloseGrace.
	CloseGrace time.Duration
	// CloseLinger is how long, after CloseGrace, the socket of a client that
	// has not answered stays open with its write side shut and its input
	// read and discarded (MaxMessageBytes at most), so that a client still
	// reading a backlog reaches the close frame instead of a reset; the
	// session's resources are released already. Negative: closed at once.
	// Default the larger of DefaultCloseLinger and IdleTimeout + PingInterval
	// (a client that has not answered a ping for IdleTimeout is closed, so a
	// client still open is at most that far behind).
	CloseLinger time.Duration
	// ReturnAccessToken lists the OAuth clients whose sessions get their
	// access token back (Base-64) in Identify replies, so the client can
	// save it and restore the connection later (docs/api-surface.md §2.5: "if
	// permitted"); the original web client needs it. "*" permits every
	// client. Default none: a token is a credential, and a client that
	// did not ask for it should not be handed one more copy.
	ReturnAccessToken []string
	// Profile is how the Auth replies are spelled.
	Profile zenith.Profile
	// Policy authorizes Controller/Topic pairs. Default policy.Default().
	Policy *policy.Policy

	// SuperviseInterval is the period of the gateway's supervisor, which
	// finds expired identities, re-verifies tokens and closes sessions
	// past ExpiryGrace: expiry and revocation take effect within it.
	// Default DefaultSuperviseInterval.
	SuperviseInterval time.Duration
	// RecheckInterval is how often a live session's access token is
	// verified again (Verifier.VerifyAccessToken): a token the verifier
	// now refuses (revoked, its refresh family revoked, its user
	// disabled) ends the session's authority, as expiry does, within
	// RecheckInterval plus SuperviseInterval (plus the verifier's own
	// revocation refresh). A verifier fault changes nothing. Identities
	// without a token (a PasswordChecker's that carries none) are not
	// re-verified. Default DefaultRecheckInterval.
	RecheckInterval time.Duration
	// RevocationsChanged, when set, returns a channel that is closed the
	// next time the Verifier's refusals may have grown (a revocation came
	// in; the Caddy glue passes the identity verifier's
	// RevocationsChanged), and is called again after each close. The
	// supervisor then walks at once and verifies again every live session
	// last checked before the change, instead of waiting for
	// RecheckInterval: a revocation ends the sessions it covers as soon
	// as the verifier applies it. Default nil: RecheckInterval alone.
	RevocationsChanged func() <-chan struct{}
	// ExpiryGrace is how long a session whose authority lapsed (expiry or
	// revocation) stays open, its subscriptions remembered, for a fresh
	// AuthToken or AuthOwner of the same subject; after it the socket is
	// closed with 1008. Default DefaultExpiryGrace.
	ExpiryGrace time.Duration
	// Limits are every session's entitlement limits; zero fields take
	// their Default*.
	Limits policy.Limits
	// LimitOverrides raise the limits of some sessions: a session's
	// effective limits are, field by field, the largest of Limits and of
	// every override that matches it, recomputed on each
	// (re-)authentication. Default none.
	LimitOverrides []policy.LimitOverride
	// MaxSubscriptionBytes bounds, per session, the total size of the
	// Sub messages the gateway keeps to re-send when a lapsed session
	// authenticates again, each with its topic once more (the key it is
	// kept under); a Sub over it is answered Error/Limited. A
	// session with many subscriptions and large Sub messages may need
	// more. Default DefaultMaxSubscriptionBytes.
	MaxSubscriptionBytes int64
	// TransactionIDs is the backend's TransactionID type: what a client
	// may send, and where the gateway's own messages take theirs (a
	// reserved range clients may not use). TransactionIDsInt53 (the
	// default): the integers a double holds exactly, ±(2^53 - 1), as
	// JavaScript and the web client have them; the gateway's from
	// 9007199254000000. TransactionIDsInt32, for a backend that reads a
	// 32-bit int: -2^31 to 2^31 - 1; the gateway's from -2^31 to
	// -2147400000. A backend that cannot read the gateway's own Unsub
	// would keep the subscription open after the session lost the right
	// to it.
	TransactionIDs string
	// RequireTLS withholds WithheldScopes from every identity of a
	// session whose connection is not secure (Secure), before the policy,
	// the Identify replies and the backend's identity headers see them.
	// Default false.
	RequireTLS bool
	// WithheldScopes are the scopes RequireTLS withholds. Default
	// DefaultWithheldScopes (Service/Trading, Service/OrderPad). Each must
	// be a scope a rule of the policy requires or a limit override names,
	// and RequireTLS set.
	WithheldScopes []string
	// Secure reports whether the client's connection is secure; nil
	// means r.TLS != nil. Behind a proxy that ends TLS the Caddy glue
	// supplies one that trusts X-Forwarded-Proto only from trusted
	// proxies.
	Secure func(r *http.Request) bool
	// ClientIP is the client's address: what AuthOwner's brute-force
	// defence counts failures by (OwnerCredentials.RemoteAddr), and the
	// sessions' log lines show. nil means r.RemoteAddr. Behind a proxy
	// the Caddy glue supplies Caddy's client IP, which honours the
	// server's trusted_proxies: else every client would count as the
	// proxy, and a stranger's wrong passwords would lock anyone out.
	ClientIP func(r *http.Request) string
	// TraceSubject puts the subject (Identity.Subject) on a socket's
	// spans, when its upgrade is traced (trace.go); the client is always
	// there. Default false: traces are often kept longer, and read by more
	// people, than the audit log.
	TraceSubject bool

	// Verifier checks access tokens. Required.
	Verifier Verifier
	// Passwords answers AuthOwner; nil answers Reject.
	Passwords PasswordChecker
	// Codes answers AuthCode; nil answers Reject.
	Codes CodeExchanger
	// BackendHeaders sets the identity headers of the backend leg's
	// upgrade request; nil sends none.
	BackendHeaders func(h http.Header, id Identity)
	// Metrics receives the gateway's counts; nil discards them.
	Metrics Metrics
	// Logger receives the audit log and the gateway's faults; nil
	// discards them.
	Logger *zap.Logger
	// Now is the clock of the Auth replies (ExpiresIn), of the expiry
	// checks and of ExpiryGrace; nil means time.Now. Socket deadlines
	// and RecheckInterval use the system clock.
	Now func() time.Time

	tids *tidScheme // TransactionIDs' scheme (withDefaults)
}

// The values of Config.TransactionIDs.
const (
	TransactionIDsInt53 = "int53"
	TransactionIDsInt32 = "int32"
)

// Validate checks c and changes nothing.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Upstreams) == 0 {
		errs = append(errs, errors.New("no upstream"))
	}
	for i, u := range c.Upstreams {
		// The errors quote the URL without its user info, query and
		// fragment (shownURL), or not at all when it does not parse.
		p, err := url.Parse(u)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("upstream %d is not a URL", i))
		case p.User != nil:
			errs = append(errs, fmt.Errorf("upstream %d (%q): user info in the URL", i, shownURL(p)))
		case p.Scheme != "ws" && p.Scheme != "wss":
			errs = append(errs, fmt.Errorf("upstream %d (%q): scheme must be ws or wss", i, shownURL(p)))
		case p.Host == "":
			errs = append(errs, fmt.Errorf("upstream %d (%q): no host", i, shownURL(p)))
		case p.Query().Has("version"):
			errs = append(errs, fmt.Errorf("upstream %d (%q): the client's version is added to the query, the URL may not hold one", i, shownURL(p)))
		}
	}
	for _, p := range c.Subprotocols {
		if p == "" || strings.ContainsFunc(p, isSpaceOrControl) || strings.ContainsAny(p, `,;"`) {
			errs = append(errs, fmt.Errorf("subprotocol %q is not a token", p))
		}
	}
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			continue
		}
		p, err := url.Parse(o)
		if err != nil || p.Scheme == "" || p.Host == "" || (p.Path != "" && p.Path != "/") || p.RawQuery != "" {
			errs = append(errs, fmt.Errorf("allowed origin %q is not scheme://host[:port]", o))
		}
	}
	for _, n := range []struct {
		name string
		v    int64
	}{
		{"max_message_bytes", c.MaxMessageBytes},
		{"max_backend_message_bytes", c.MaxBackendMessageBytes},
		{"max_token_bytes", int64(c.MaxTokenBytes)},
		{"auth_max_messages", int64(c.AuthMaxMessages)},
		{"max_unauthenticated", int64(c.MaxUnauthenticated)},
		{"send_queue", int64(c.SendQueue)},
		{"send_queue_bytes", c.SendQueueBytes},
	} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("%s is negative", n.name))
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"auth_timeout", c.AuthTimeout},
		{"ping_interval", c.PingInterval},
		{"idle_timeout", c.IdleTimeout},
		{"backend_message_timeout", c.BackendMessageTimeout},
		{"write_timeout", c.WriteTimeout},
		{"dial_timeout", c.DialTimeout},
		{"close_grace", c.CloseGrace},
		{"supervise_interval", c.SuperviseInterval},
		{"recheck_interval", c.RecheckInterval},
		{"expiry_grace", c.ExpiryGrace},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s is negative", d.name))
		}
	}
	ping, idle := or(c.PingInterval, DefaultPingInterval), or(c.IdleTimeout, DefaultIdleTimeout)
	if idle <= ping {
		errs = append(errs, fmt.Errorf("idle_timeout %v must exceed ping_interval %v", idle, ping))
	}
	for _, id := range c.ReturnAccessToken {
		if id == "" {
			errs = append(errs, errors.New("return_access_token: empty client id"))
		}
	}
	errs = append(errs, c.validateLimits()...)
	switch c.TransactionIDs {
	case "", TransactionIDsInt53, TransactionIDsInt32:
	default:
		errs = append(errs, fmt.Errorf("transaction_ids %q is neither %s nor %s", c.TransactionIDs, TransactionIDsInt53, TransactionIDsInt32))
	}
	if len(c.WithheldScopes) > 0 && !c.RequireTLS {
		errs = append(errs, errors.New("withheld scopes without require_tls withhold nothing"))
	}
	pol := c.Policy
	if pol == nil {
		pol = policy.Default()
	}
	for _, s := range c.WithheldScopes {
		switch {
		case s == "" || strings.ContainsFunc(s, isSpaceOrControl):
			errs = append(errs, fmt.Errorf("withheld scope %q is empty or holds a space or control character", s))
		case !pol.UsesScope(s) && !slices.ContainsFunc(c.LimitOverrides, func(o policy.LimitOverride) bool { return o.Scope == s }):
			// A misspelt or short name ("Trading") would withhold
			// nothing, and replace the defaults.
			errs = append(errs, fmt.Errorf("withheld scope %q is required by no rule of the message policy nor named by a limit override: withholding it would only take it from the backend's identity headers; refused as a likely misspelling (the scopes are such as %s)", s, policy.ScopeTrading))
		}
	}
	if c.Verifier == nil {
		errs = append(errs, errors.New("no verifier"))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if len(c.Subprotocols) == 0 {
		c.Subprotocols = []string{DefaultSubprotocol}
	}
	c.MaxMessageBytes = or(c.MaxMessageBytes, DefaultMaxMessageBytes)
	c.MaxBackendMessageBytes = or(c.MaxBackendMessageBytes, DefaultMaxBackendMessageBytes)
	c.MaxTokenBytes = or(c.MaxTokenBytes, zenith.DefaultMaxTokenBytes)
	c.AuthTimeout = or(c.AuthTimeout, DefaultAuthTimeout)
	c.AuthMaxMessages = or(c.AuthMaxMessages, DefaultAuthMaxMessages)
	c.MaxUnauthenticated = or(c.MaxUnauthenticated, DefaultMaxUnauthenticated)
	c.PingInterval = or(c.PingInterval, DefaultPingInterval)
	c.BackendMessageTimeout = or(c.BackendMessageTimeout, DefaultBackendMessageTimeout)
	c.IdleTimeout = or(c.IdleTimeout, DefaultIdleTimeout)
	c.WriteTimeout = or(c.WriteTimeout, DefaultWriteTimeout)
	c.SendQueue = or(c.SendQueue, DefaultSendQueue)
	c.SendQueueBytes = or(c.SendQueueBytes, DefaultSendQueueBytes)
	c.DialTimeout = or(c.DialTimeout, DefaultDialTimeout)
	c.CloseGrace = or(c.CloseGrace, DefaultCloseGrace)
	c.CloseLinger = or(c.CloseLinger, max(DefaultCloseLinger, c.IdleTimeout+c.PingInterval))
	c.SuperviseInterval = or(c.SuperviseInterval, DefaultSuperviseInterval)
	c.RecheckInterval = or(c.RecheckInterval, DefaultRecheckInterval)
	c.ExpiryGrace = or(c.ExpiryGrace, DefaultExpiryGrace)
	c.Limits.Subscriptions = or(c.Limits.Subscriptions, policy.DefaultSubscriptions)
	c.Limits.MessagesPerSecond = or(c.Limits.MessagesPerSecond, policy.DefaultMessagesPerSecond)
	c.Limits.Burst = or(c.Limits.Burst, policy.DefaultBurst)
	c.Limits.Sessions = or(c.Limits.Sessions, policy.DefaultSessions)
	c.LimitOverrides = slices.Clone(c.LimitOverrides)
	c.MaxSubscriptionBytes = or(c.MaxSubscriptionBytes, DefaultMaxSubscriptionBytes)
	c.tids = &schemeInt53
	if c.TransactionIDs == TransactionIDsInt32 {
		c.tids = &schemeInt32
	}
	if len(c.WithheldScopes) == 0 {
		c.WithheldScopes = DefaultWithheldScopes
	}
	c.WithheldScopes = slices.Clone(c.WithheldScopes)
	if c.ClientIP == nil {
		c.ClientIP = func(r *http.Request) string { return r.RemoteAddr }
	}
	if c.Secure == nil {
		c.Secure = func(r *http.Request) bool { return r.TLS != nil }
	}
	if c.Policy == nil {
		c.Policy = policy.Default()
	}
	if c.Metrics == nil {
		c.Metrics = nopMetrics{}
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// returnsToken reports whether a session of the OAuth client clientID
// gets its access token back in Identify replies.
func (c *Config) returnsToken(clientID string) bool {
	for _, id := range c.ReturnAccessToken {
		if id == "*" || id == clientID {
			return true
		}
	}
	return false
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// shownURL is u as an error may quote it: without user info, query or
// fragment, any of which may hold a secret.
func shownURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }
