package authorize

import (
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"net/http"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/factors"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/web"
)

// Names of the endpoints in logs and metrics.
const (
	EndpointName = "authorization"
	LoginName    = "login"
	ConsentName  = "consent"
)

// DefaultPendingLifetime is how long a login or consent form stays valid.
const DefaultPendingLifetime = 30 * time.Minute

// Store is what the endpoint reads and writes itself: users (a session's
// user must still exist and be enabled), consents, and counters (a consent
// form is answered once).
type Store interface {
	store.Users
	store.Consents
	store.Counters
}

// Config configures the endpoint.
type Config struct {
	// Issuer is the identity server's URL: the iss of every response
	// (RFC 9207). Required.
	Issuer string
	// LoginPath and ConsentPath are the paths the login and consent forms
	// post to. Required.
	LoginPath, ConsentPath string
	// FactorPath is the path the second-factor form posts to; required
	// with Factors.
	FactorPath string
	// Factors checks second factors. Default: none, and a request for a
	// scope that needs one (tokens.Service.NeedsSecondFactor) gets the
	// other scopes.
	Factors *factors.Service
	// Clients are the registered clients. Required.
	Clients *clients.Registry
	// Tokens issues codes and tokens. Required.
	Tokens *tokens.Service
	// Keys are the server's published keys, which check an
	// id_token_hint. Required.
	Keys verify.KeySource
	// Store holds users and consents. Required.
	Store Store
	// Sessions finds and starts login sessions. Required.
	Sessions *session.Manager
	// Guard makes the forms' anti-forgery tokens. Required.
	Guard *session.Guard
	// Passwords checks the login form's credentials, with the password
	// grant's brute-force defence. Required.
	Passwords *users.Checker
	// Pages renders the pages. Required.
	Pages *web.Pages
	// SealKey (32 bytes) seals the request between the pages; every
	// instance must share it. Required.
	SealKey []byte
	// ClientIP returns the request's source address for the brute-force
	// defence. Required.
	ClientIP func(*http.Request) string
	// PendingLifetime is how long a login or consent form stays valid.
	// Default 30m.
	PendingLifetime time.Duration
	// Failed, if set, counts a failure by endpoint and error code.
	Failed func(endpoint, code string)
	// Issued, if set, counts tokens issued through the front channel, by
	// "implicit" and client.
	Issued func(grant, clientID string)
	// Logger receives failures at Debug (Error for server faults).
	Logger *zap.Logger
	// Audit receives login events. Default: no-op.
	Audit *zap.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Endpoint is the authorization endpoint and its login and consent forms.
// It is safe for concurrent use.
type Endpoint struct {
	cfg  Config
	aead cipher.AEAD
}

// New checks cfg and returns the endpoint.
func New(cfg Config) (*Endpoint, error) {
	if cfg.Issuer == "" || cfg.LoginPath == "" || cfg.ConsentPath == "" || cfg.Clients == nil || cfg.Tokens == nil ||
		cfg.Store == nil || cfg.Sessions == nil || cfg.Guard == nil || cfg.Passwords == nil || cfg.Pages == nil ||
		cfg.ClientIP == nil || cfg.Keys == nil {
		return nil, errors.New("authorization endpoint: missing dependency")
	}
	if cfg.Factors != nil && cfg.FactorPath == "" {
		return nil, errors.New("authorization endpoint: second factors need the path of their form")
	}
	if !cfg.Tokens.CodesEnabled() {
		return nil, errors.New("authorization endpoint: the token service keeps no codes")
	}
	if len(cfg.SealKey) != 32 {
		return nil, errors.New("authorization endpoint: the seal key must be 32 bytes")
	}
	block, err := aes.NewCipher(cfg.SealKey)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if cfg.PendingLifetime <= 0 {
		cfg.PendingLifetime = DefaultPendingLifetime
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Audit == nil {
		cfg.Audit = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Endpoint{cfg: cfg, aead: aead}, nil
}

// ServeHTTP is GET|POST /connect/authorize.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	web.PageHeaders(w.Header(), "")
	q, c, pe, perr := e.parse(w, r)
	switch {
	case pe != nil:
		if pe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", "GET, POST")
		}
		e.showError(w, r, EndpointName, "", pe)
	case perr != nil:
		e.fail(w, r, EndpointName, q, c, perr)
	default:
		e.proceed(w, r, EndpointName, q, c, nil)
	}
}

// login is a session just started by the login form, with its user.
type login struct {
	session store.Session
	user    store.User
}

// proceed carries a checked request on: a login unless the browser's
// session fits (fresh is the one the login form just started), consent
// where the client needs it, then the response. name is the endpoint it
// runs in, for the log.
func (e *Endpoint) proceed(w http.ResponseWriter, r *http.Request, name string, q *request, c *clients.Client, fresh *login) {
	ctx := r.Context()
	var sess store.Session
	var user store.User
	if fresh != nil {
		sess, user = fresh.session, fresh.user
		if q.HintSubject != "" && user.Subject != q.HintSubject {
			// Signed in as another user than the hint's (Core §3.1.2.1:
			// the one it names is not logged in by the request).
			e.fail(w, r, name, q, c, oauth.NewError(oauth.ErrLoginRequired, "signed in as another user than the id_token_hint's"))
			return
		}
	} else {
		s, ok, err := e.cfg.Sessions.Current(ctx, r)
		if err != nil {
			e.fail(w, r, name, q, c, oauth.ServerError(err))
			return
		}
		// A hint naming another user than the session's asks for that
		// user (OpenID Connect Core §3.1.2.1): a silent request is told
		// to sign in, not given the other user's code.
		if ok && !q.needsLogin(s.AuthTime, e.cfg.Now()) && (q.HintSubject == "" || q.HintSubject == s.Subject) {
			if user, ok, err = e.activeUser(r, s.Subject); err != nil {
				e.fail(w, r, name, q, c, oauth.ServerError(err))
				return
			}
			sess = s
		} else {
			ok = false
		}
		if !ok {
			if q.prompts(promptNone) {
				e.fail(w, r, name, q, c, oauth.NewError(oauth.ErrLoginRequired, "the user is not logged in"))
				return
			}
			e.showLogin(w, r, name, q, c, http.StatusOK, "", "")
			return
		}
	}
	if stepUp, err := e.needsStepUp(r, q, sess, user); err != nil {
		e.fail(w, r, name, q, c, oauth.ServerError(err))
		return
	} else if stepUp {
		if q.prompts(promptNone) {
			e.fail(w, r, name, q, c, oauth.NewError(oauth.ErrInteractionRequired, "the request needs a second factor, which the session has not passed"))
			return
		}
		e.showFactor(w, r, name, q, c, sess, user, http.StatusOK, "")
		return
	}
	granted, perr := e.grantedScopes(q, user, sess)
	if perr != nil {
		e.fail(w, r, name, q, c, perr)
		return
	}
	if c.RequireConsent {
		need := q.prompts(promptConsent)
		if !need {
			var err error
			if need, err = e.needsConsent(r, user.Subject, c.ID, granted); err != nil {
				e.fail(w, r, name, q, c, oauth.ServerError(err))
				return
			}
		}
		if need {
			if q.prompts(promptNone) {
				e.fail(w, r, name, q, c, oauth.NewError(oauth.ErrConsentRequired, "the user has not allowed this client"))
				return
			}
			e.showConsent(w, r, name, q, c, sess, user, granted)
			return
		}
	}
	e.respond(w, r, name, q, c, sess, user, granted)
}

// activeUser is the user of a session, if it still exists and is enabled.
func (e *Endpoint) activeUser(r *http.Request, subject string) (store.User, bool, error) {
	u, err := e.cfg.Store.UserBySubject(r.Context(), subject)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.User{}, false, nil
	case err != nil:
		return store.User{}, false, err
	}
	return u, !u.Disabled, nil
}

// grantedScopes are the requested scopes the user may hold, without
// those that need a second factor the session has not passed (a user
// with no factor to pass gets the others).
func (e *Endpoint) grantedScopes(q *request, u store.User, sess store.Session) ([]string, *oauth.Error) {
	held := oauth.Intersect(q.Scopes, u.Scopes)
	granted := e.cfg.Tokens.FitFactors(true, held, sess.AMR)
	switch {
	case len(held) == 0:
		return nil, oauth.NewError(oauth.ErrInvalidScope, "none of the requested scopes is allowed for this user")
	case len(granted) == 0:
		return nil, oauth.NewError(oauth.ErrInvalidScope, "the requested scopes need a second factor, which the user has not set up")
	}
	if q.IDToken && !slices.Contains(granted, oauth.ScopeOpenID) {
		return nil, oauth.NewError(oauth.ErrInvalidScope, "the user may not hold the openid scope")
	}
	return granted, nil
}

// respond issues what the response type asks for and sends it back.
func (e *Endpoint) respond(w http.ResponseWriter, r *http.Request, name string, q *request, c *clients.Client,
	sess store.Session, user store.User, granted []string) {
	ctx := r.Context()
	pairs, perr := oauth.NarrowDetails(user.Entitlements, q.askedDetails())
	if perr != nil {
		e.fail(w, r, name, q, c, perr)
		return
	}
	g := tokens.Grant{
		Client: c, User: &user, Subject: user.Subject, Scopes: granted, AuthTime: sess.AuthTime, AMR: sess.AMR,
		Type: oauth.GrantAuthorizationCode, Nonce: q.Nonce, SessionID: sess.ID, Entitlements: pairs,
	}
	fc, perr := e.cfg.Tokens.Authorize(ctx, tokens.Authorization{
		Grant: g, RedirectURI: q.RedirectParam, CodeChallenge: q.Challenge, CodeChallengeMethod: q.Method,
		Code: q.Code, Token: q.Token, IDToken: q.IDToken,
	})
	switch {
	case perr != nil && errors.Is(perr.Cause, tokens.ErrSessionsEnded):
		// The user's sessions ended (a changed password, a disabled user)
		// after this one was read: as if there were none.
		if q.prompts(promptNone) {
			e.fail(w, r, name, q, c, oauth.NewError(oauth.ErrLoginRequired, "the user is not logged in"))
			return
		}
		e.showLogin(w, r, name, q, c, http.StatusOK, "", "")
		return
	case perr != nil:
		e.fail(w, r, name, q, c, perr)
		return
	}
	if err := e.cfg.Sessions.Touch(ctx, sess, c.ID); err != nil {
		e.fail(w, r, name, q, c, oauth.ServerError(err))
		return
	}
	if (q.Token || q.IDToken) && e.cfg.Issued != nil {
		e.cfg.Issued(oauth.GrantImplicit, c.ID)
	}
	out := responseParams(fc)
	if slices.Contains(granted, oauth.ScopeOpenID) {
		// OpenID Connect Session Management 1.0 §3, for the check-session
		// iframe of the relying party's origin.
		ss, err := session.NewSessionState(c.ID, web.Origin(q.RedirectURI), session.State(sess))
		if err != nil {
			e.fail(w, r, name, q, c, oauth.ServerError(err))
			return
		}
		out.Set("session_state", ss)
	}
	e.send(w, r, q, out)
}
