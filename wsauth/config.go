package wsauth

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// Defaults of the gateway's limits: the bounds that keep one socket, or
// one client without a credential, from holding more of the gateway than
// its share (docs/protocol.md, "Transport"). A zero Config field means its
// default.
const (
	// DefaultSubprotocol is the sub-protocol negotiated when
	// Transport.Subprotocols names none (docs/api-surface.md §9).
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

// Config configures a Gateway, in groups: the backend leg (Backend), the
// client's socket and the timers of both legs (Transport), authentication
// (Auth), a live session's authority over time (Live), what a session may
// hold and send (Limits), and what the caller plugs in (Hooks); beside
// them the message policy and the venue table, the Auth replies' spelling and what a socket's
// spans show (Policy, Profile, TraceSubject). Zero fields take their
// Default*; Validate checks it without changing it, New fills the defaults
// into its own copy.
type Config struct {
	Backend   Backend
	Transport Transport
	Auth      Auth
	Live      Live
	Limits    Limits
	// Policy authorizes Controller/Topic pairs. Default policy.Default().
	Policy *policy.Policy
	// Venues, when set, checks each message against the session's
	// market-data entitlements (Identity.Entitlements) as well as its
	// scopes: a message naming a venue whose feed the session does not
	// hold is refused as one its scopes do not allow. Default nil: no
	// entitlement check.
	Venues *policy.Venues
	// Profile is how the Auth replies are spelled.
	Profile zenith.Profile
	// TraceSubject puts the subject (Identity.Subject) on a socket's
	// spans, when its upgrade is traced (trace.go); the client is always
	// there. Default false: traces are often kept longer, and read by more
	// people, than the audit log.
	TraceSubject bool
	Hooks        Hooks

	tids     *tidScheme // Backend.TransactionIDs' scheme (withDefaults)
	auditing bool       // Hooks.Audit was given: records are built (audit.go; withDefaults)
	// gen numbers the configurations a Gateway has had in force (New's
	// is 1, each Reconfigure's one more). A session remembers which one
	// it last took its limits from and fitted its subscriptions to by
	// this number, not by a pointer: a pointer would keep a replaced
	// configuration, with its verifier and identity server, reachable as
	// long as the session stayed quiet.
	gen uint64
	// upgrader answers the upgrades this configuration admits (built from
	// its admission settings by Gateway.newUpgrader, before it is put in
	// force): admit takes it with the sub-protocols it checked, so that
	// one upgrade never mixes two configurations' lists.
	upgrader *websocket.Upgrader
}

// Auth is authentication: how long and how much a socket may send before
// it, how many may wait for it, and what an identity gets (its token back,
// its scopes without TLS).
type Auth struct {
	// MaxTokenBytes bounds an access token (header or AuthToken). Default
	// zenith.DefaultMaxTokenBytes.
	MaxTokenBytes int
	// Timeout is how long a socket may stay unauthenticated before it is
	// closed with 1008. Default DefaultAuthTimeout.
	Timeout time.Duration
	// MaxMessages is how many messages an unauthenticated socket may send;
	// the next one closes it with 1008. Default DefaultAuthMaxMessages.
	MaxMessages int
	// MaxUnauthenticated bounds the sockets open without authentication,
	// and, apart, the upgrades whose Authorization header is being
	// verified (each within Timeout). One source (an IPv4 address, an
	// IPv6 /64, as Hooks.ClientIP gives it) holds at most a sixteenth of
	// the first (at least one). Default DefaultMaxUnauthenticated.
	MaxUnauthenticated int
	// ReturnAccessToken lists the OAuth clients whose sessions get their
	// access token back (Base-64) in Identify replies, so the client can
	// save it and restore the connection later (docs/api-surface.md §2.5: "if
	// permitted"); the original web client needs it. "*" permits every
	// client. Default none: a token is a credential, and a client that
	// did not ask for it should not be handed one more copy.
	ReturnAccessToken []string
	// RequireTLS withholds WithheldScopes from every identity of a
	// session whose connection is not secure (Hooks.Secure), before the
	// policy, the Identify replies and the backend's identity headers see
	// them. Default false.
	RequireTLS bool
	// WithheldScopes are the scopes RequireTLS withholds. Default
	// DefaultWithheldScopes (Service/Trading, Service/OrderPad). Each must
	// be a scope a rule of the policy requires or a limit override names,
	// and RequireTLS set.
	WithheldScopes []string
}

// Validate checks a and changes nothing. Whether each withheld scope is
// one the policy or a limit override uses is Config.Validate's to check.
func (a *Auth) Validate() error {
	errs := []error{
		negative("max_token_bytes", a.MaxTokenBytes),
		negative("auth_max_messages", a.MaxMessages),
		negative("max_unauthenticated", a.MaxUnauthenticated),
		negative("auth_timeout", a.Timeout),
	}
	for _, id := range a.ReturnAccessToken {
		if id == "" {
			errs = append(errs, errors.New("return_access_token: empty client id"))
		}
	}
	if len(a.WithheldScopes) > 0 && !a.RequireTLS {
		errs = append(errs, errors.New("withheld scopes without require_tls withhold nothing"))
	}
	for _, s := range a.WithheldScopes {
		if s == "" || strings.ContainsFunc(s, isSpaceOrControl) {
			errs = append(errs, fmt.Errorf("withheld scope %q is empty or holds a space or control character", s))
		}
	}
	return errors.Join(errs...)
}

// Live is how a live session's authority is kept over time: the
// supervisor's period, the token's rechecks, the grace after a lapse.
type Live struct {
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
	// revocation refresh; Hooks.RevocationsChanged shortens it). A
	// verifier fault changes nothing. Identities without a token (a
	// PasswordChecker's that carries none) are not re-verified. Default
	// DefaultRecheckInterval.
	RecheckInterval time.Duration
	// ExpiryGrace is how long a session whose authority lapsed (expiry or
	// revocation) stays open, its subscriptions remembered, for a fresh
	// AuthToken or AuthOwner of the same subject; after it the socket is
	// closed with 1008. Default DefaultExpiryGrace.
	ExpiryGrace time.Duration
}

// Validate checks l and changes nothing.
func (l *Live) Validate() error {
	return errors.Join(
		negative("supervise_interval", l.SuperviseInterval),
		negative("recheck_interval", l.RecheckInterval),
		negative("expiry_grace", l.ExpiryGrace))
}

// Validate checks c and changes nothing: each group's Validate, and what
// spans groups (a withheld scope is one the policy or a limit override
// uses).
func (c *Config) Validate() error {
	return errors.Join(
		c.Backend.Validate(),
		c.Transport.Validate(),
		c.Auth.Validate(),
		c.Live.Validate(),
		c.Limits.Validate(),
		c.validateWithheld(),
		c.Hooks.Validate())
}

// validateWithheld checks that each withheld scope is one a rule of the
// policy requires or a limit override names: a misspelt or short name
// ("Trading") would withhold nothing, and replace the defaults.
func (c *Config) validateWithheld() error {
	pol := c.Policy
	if pol == nil {
		pol = policy.Default()
	}
	var errs []error
	for _, s := range c.Auth.WithheldScopes {
		if s == "" || strings.ContainsFunc(s, isSpaceOrControl) {
			continue // Auth.Validate says so
		}
		if !pol.UsesScope(s) && !slices.ContainsFunc(c.Limits.Overrides, func(o policy.LimitOverride) bool { return o.Scope == s }) {
			errs = append(errs, fmt.Errorf("withheld scope %q is required by no rule of the message policy nor named by a limit override: withholding it would only take it from the backend's identity headers; refused as a likely misspelling (the scopes are such as %s)", s, policy.ScopeTrading))
		}
	}
	return errors.Join(errs...)
}

// negative is the error of a knob, named as in JSON, whose value v is
// negative; nil otherwise.
func negative[T int | int64 | time.Duration](name string, v T) error {
	if v < 0 {
		return fmt.Errorf("%s is negative", name)
	}
	return nil
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	_, nop := c.Hooks.Audit.(nopAuditor) // a Config with its defaults already
	c.auditing = c.Hooks.Audit != nil && !nop
	c.Backend = c.Backend.withDefaults()
	c.Transport = c.Transport.withDefaults()
	c.Auth = c.Auth.withDefaults()
	c.Live = c.Live.withDefaults()
	c.Limits = c.Limits.withDefaults()
	c.Hooks = c.Hooks.withDefaults()
	c.tids = &schemeInt53
	if c.Backend.TransactionIDs == TransactionIDsInt32 {
		c.tids = &schemeInt32
	}
	if c.Policy == nil {
		c.Policy = policy.Default()
	}
	return c
}

func (a Auth) withDefaults() Auth {
	a.MaxTokenBytes = or(a.MaxTokenBytes, zenith.DefaultMaxTokenBytes)
	a.Timeout = or(a.Timeout, DefaultAuthTimeout)
	a.MaxMessages = or(a.MaxMessages, DefaultAuthMaxMessages)
	a.MaxUnauthenticated = or(a.MaxUnauthenticated, DefaultMaxUnauthenticated)
	if len(a.WithheldScopes) == 0 {
		a.WithheldScopes = DefaultWithheldScopes
	}
	a.WithheldScopes = slices.Clone(a.WithheldScopes)
	return a
}

func (l Live) withDefaults() Live {
	l.SuperviseInterval = or(l.SuperviseInterval, DefaultSuperviseInterval)
	l.RecheckInterval = or(l.RecheckInterval, DefaultRecheckInterval)
	l.ExpiryGrace = or(l.ExpiryGrace, DefaultExpiryGrace)
	return l
}

// returnsToken reports whether a session of the OAuth client clientID
// gets its access token back in Identify replies.
func (a *Auth) returnsToken(clientID string) bool {
	for _, id := range a.ReturnAccessToken {
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
