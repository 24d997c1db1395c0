package wsauth

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/entitle"
)

// Hooks are what the caller plugs into a Gateway: the credential checks,
// the backend leg's identity headers, the revocation signal, the metrics,
// the log, the clock, and how a request's client and security are read.
// The Caddy glue fills them in.
type Hooks struct {
	// Verifier checks access tokens. Required.
	Verifier Verifier
	// Passwords answers AuthOwner; nil answers Reject.
	Passwords PasswordChecker
	// Codes answers AuthCode; nil answers Reject.
	Codes CodeExchanger
	// BackendHeaders sets the identity headers of the backend leg's
	// upgrade request; nil sends none.
	BackendHeaders func(h http.Header, id Identity)
	// RevocationsChanged, when set, returns a channel that is closed the
	// next time the Verifier's refusals may have grown (a revocation came
	// in; the Caddy glue passes the identity verifier's
	// RevocationsChanged), and is called again after each close. The
	// supervisor then walks at once and verifies again every live session
	// last checked before the change, instead of waiting for
	// Live.RecheckInterval: a revocation ends the sessions it covers as
	// soon as the verifier applies it. Default nil: RecheckInterval alone.
	RevocationsChanged func() <-chan struct{}
	// Metrics receives the gateway's counts; nil discards them.
	Metrics Metrics
	// Audit receives the audit records (audit.go says which), and says
	// when new sessions and logins are to be refused because the audit
	// cannot write: the upgrade then gets 503, and an Auth message on a
	// socket not yet authenticated closes it with 1013 (try again later);
	// sessions already authenticated go on, re-authentications included.
	// nil records nothing.
	Audit Auditor
	// Logger receives the audit log and the gateway's faults; nil
	// discards them.
	Logger *zap.Logger
	// Now is the clock of the Auth replies (ExpiresIn), of the expiry
	// checks and of Live.ExpiryGrace; nil means time.Now. Socket deadlines
	// and Live.RecheckInterval use the system clock.
	Now func() time.Time
	// ClientIP is the client's address: what AuthOwner's brute-force
	// defence counts failures by (OwnerCredentials.RemoteAddr), and the
	// sessions' log lines show. nil means r.RemoteAddr. Behind a proxy
	// the Caddy glue supplies Caddy's client IP, which honours the
	// server's trusted_proxies: else every client would count as the
	// proxy, and a stranger's wrong passwords would lock anyone out.
	ClientIP func(r *http.Request) string
	// Secure reports whether the client's connection is secure
	// (Auth.RequireTLS); nil means r.TLS != nil. Behind a proxy that ends
	// TLS the Caddy glue supplies one that trusts X-Forwarded-Proto only
	// from trusted proxies.
	Secure func(r *http.Request) bool
}

// Validate checks h and changes nothing.
func (h *Hooks) Validate() error {
	if h.Verifier == nil {
		return errors.New("no verifier")
	}
	return nil
}

func (h Hooks) withDefaults() Hooks {
	if h.ClientIP == nil {
		h.ClientIP = func(r *http.Request) string { return r.RemoteAddr }
	}
	if h.Secure == nil {
		h.Secure = func(r *http.Request) bool { return r.TLS != nil }
	}
	if h.Metrics == nil {
		h.Metrics = nopMetrics{}
	}
	if h.Audit == nil {
		h.Audit = nopAuditor{}
	}
	if h.Logger == nil {
		h.Logger = zap.NewNop()
	}
	if h.Now == nil {
		h.Now = time.Now
	}
	return h
}

// Identity is who a session speaks for, as the Verifier or the
// PasswordChecker found it. The gateway treats it as read-only.
type Identity struct {
	// Subject is the user's fixed id (the token's sub): the UserID of the
	// Identify reply.
	Subject string
	// ClientID is the OAuth client the token was issued to.
	ClientID string
	// DisplayName is the user's friendly name; "" when unknown.
	DisplayName string
	// Scopes are the granted OAuth scopes; the policy reads them.
	Scopes []string
	// Entitlements are the market-data pairs the identity holds; the venue
	// table (Config.Venues) reads them. A re-verification that returns the
	// same token's identity with fewer (its user lost some) narrows a live
	// session's to what both hold: the subscriptions that lost their right
	// end, the others keep flowing.
	Entitlements entitle.Set
	// Expiry is when the authentication expires; zero for never.
	Expiry time.Time
	// Token is the access token the identity was verified from, for an
	// Identify reply's AccessToken (Auth.ReturnAccessToken) and for a
	// BackendHeaders hook that passes the original Authorization on. It
	// must never be logged.
	Token string
}

// Verifier checks an access token. The Caddy glue fills it with the
// identity server's verifier (identity/verify).
type Verifier interface {
	// VerifyAccessToken returns the identity token speaks for. A token
	// that is not accepted gets an error that errors.Is ErrRefused
	// (best a *Refusal); any other error is the verifier's own fault
	// (keys unavailable), answered as HTTP 503 on the upgrade and Reject
	// on a message, and logged.
	VerifyAccessToken(ctx context.Context, token string) (Identity, error)
}

// OwnerCredentials are the Data of an AuthOwner message.
type OwnerCredentials struct {
	ClientID     string
	ClientSecret string
	Username     string
	Password     string
	// RemoteAddr is the client's address (Hooks.ClientIP), for the
	// brute-force defence.
	RemoteAddr string
}

// PasswordChecker answers AuthOwner messages: the identity server's
// password grant with its brute-force defence. Errors are refusals or
// faults as for Verifier.
type PasswordChecker interface {
	CheckOwner(ctx context.Context, cred OwnerCredentials) (Identity, error)
}

// ErrRefused is what a Verifier's or PasswordChecker's refusal matches.
var ErrRefused = errors.New("credential refused")

// Refusal is a refused credential. Reason is safe to log and count (the
// verifier's fixed vocabulary); Cause is detail for the log. Neither may
// carry the credential.
type Refusal struct {
	Reason string
	Cause  error
}

func (r *Refusal) Error() string {
	if r.Cause != nil {
		return "credential refused: " + r.Reason + ": " + r.Cause.Error()
	}
	return "credential refused: " + r.Reason
}

// Is makes a Refusal match ErrRefused.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

func (r *Refusal) Unwrap() error { return r.Cause }

// State is a session's state, for Metrics.
type State string

// The states of a session.
const (
	StateUnauthenticated State = "unauthenticated"
	StateAuthenticated   State = "authenticated"
	// StateExpired: authenticated, and its authority lapsed (the
	// identity expired or was revoked); it waits for a fresh credential,
	// ExpiryGrace at most.
	StateExpired State = "expired"
)

// The reasons Metrics.Lapsed counts.
const (
	LapseExpired = "expired" // the identity's expiry passed
	LapseRevoked = "revoked" // the verifier refuses the token now
)

// The kinds of limit Metrics.Limited counts.
const (
	LimitSubscriptions = "subscriptions" // policy.Limits.Subscriptions, or Limits.MaxSubscriptionBytes
	LimitRate          = "rate"          // policy.Limits.MessagesPerSecond and Burst
	LimitAuth          = "auth"          // Auth messages on an authenticated session (authLimits)
	LimitSessions      = "sessions"      // policy.Limits.Sessions: a user's live sessions
)

// AuthMethod is how a session tried to authenticate.
type AuthMethod string

// The ways to authenticate.
const (
	AuthHeader   AuthMethod = "header"     // Authorization on the upgrade
	AuthTokenMsg AuthMethod = "auth_token" // an AuthToken message
	AuthOwnerMsg AuthMethod = "auth_owner" // an AuthOwner message
	AuthCodeMsg  AuthMethod = "auth_code"  // an AuthCode message
)

// The results Metrics.Auth counts.
const (
	AuthResultOK  = "success"
	AuthResultNo  = "reject"
	AuthResultErr = "error" // the verifier's own fault
)

// Metrics receives the gateway's counts; the Caddy glue implements it with
// Prometheus. Controller labels are one of the protocol's controllers or
// "other", so a client cannot grow the label set. Methods are called from
// many goroutines at once.
type Metrics interface {
	// Sessions moves delta sessions into (delta 1) or out of (-1) state.
	Sessions(state State, delta int)
	// Auth counts an authentication attempt and its result (AuthResult*).
	Auth(method AuthMethod, result string)
	// Relayed counts n client messages forwarded to the backend.
	Relayed(controller string, n int)
	// Denied counts a client message refused by the policy or before
	// authentication.
	Denied(controller string)
	// Delivered counts n backend messages written to the client.
	Delivered(n int)
	// SlowClient counts a client closed because it stopped reading.
	SlowClient()
	// Reauthenticated counts a successful authentication of a session
	// already authenticated (a fresh credential for the same subject).
	Reauthenticated()
	// Lapsed counts a session whose authority lapsed, by reason
	// (LapseExpired, LapseRevoked).
	Lapsed(reason string)
	// Limited counts a client message refused by an entitlement limit, by
	// kind (LimitSubscriptions, LimitRate).
	Limited(kind string)
	// Subscriptions moves the gauge of the subscriptions the gateway
	// tracks (lapsed sessions' included) by delta, by controller.
	Subscriptions(controller string, delta int)
}

type nopMetrics struct{}

func (nopMetrics) Sessions(State, int)       {}
func (nopMetrics) Auth(AuthMethod, string)   {}
func (nopMetrics) Relayed(string, int)       {}
func (nopMetrics) Denied(string)             {}
func (nopMetrics) Delivered(int)             {}
func (nopMetrics) SlowClient()               {}
func (nopMetrics) Reauthenticated()          {}
func (nopMetrics) Lapsed(string)             {}
func (nopMetrics) Limited(string)            {}
func (nopMetrics) Subscriptions(string, int) {}

// controllerLabel is c when it is one of the protocol's controllers
// (zenith.Controllers), else "other".
func controllerLabel(c string) string {
	switch c {
	case "Zenith", "Auth", "Market", "News", "Trading", "Watchlist", "Notify", "Channel", "Fragments":
		return c
	}
	return "other"
}
