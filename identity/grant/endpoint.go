package grant

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/users"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// EndpointName names the token endpoint in logs and metrics.
const EndpointName = "token"

// Config configures the token endpoint.
type Config struct {
	// Clients are the registered clients. Required.
	Clients *clients.Registry
	// Tokens mints. Required.
	Tokens *tokens.Service
	// Passwords checks the password grant's credentials. Required.
	Passwords *users.Checker
	// ClientIP returns the request's source address for the brute-force
	// defence. Required.
	ClientIP func(*http.Request) string
	// HSTS is the Strict-Transport-Security value of every answer.
	HSTS string
	// UniformErrorStatus answers 400 for every client error.
	UniformErrorStatus bool
	// Issued, if set, counts a token response by grant type and client.
	Issued func(grant, clientID string)
	// Failed, if set, counts a failure by endpoint and error code.
	Failed func(endpoint, code string)
	// Refusing, if set, says that token requests are to be refused
	// because the audit cannot write: they are answered 503
	// temporarily_unavailable (RFC 6749 §4.1.2.1's code, as for a store
	// outage), before the client is authenticated.
	Refusing func() bool
	// Logger receives failures at Debug (Error for server faults).
	Logger *zap.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Endpoint is the token endpoint. It is safe for concurrent use.
type Endpoint struct {
	cfg    Config
	fail   oauth.Failer
	grants map[string]handler
}

// handler is one grant: it gets the parsed request of an authenticated
// client that may use the grant.
type handler func(ctx context.Context, req *Request) (*tokens.Response, *oauth.Error)

// New returns the token endpoint.
func New(cfg Config) (*Endpoint, error) {
	if cfg.Clients == nil || cfg.Tokens == nil || cfg.Passwords == nil || cfg.ClientIP == nil {
		return nil, errors.New("token endpoint needs clients, tokens, a password checker and ClientIP")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := &Endpoint{cfg: cfg, fail: oauth.Failer{Endpoint: EndpointName, Log: cfg.Logger, Count: cfg.Failed,
		Uniform: cfg.UniformErrorStatus, Unavailable: StoreUnavailable}}
	e.grants = map[string]handler{
		oauth.GrantPassword:          e.password,
		oauth.GrantRefreshToken:      e.refresh,
		oauth.GrantClientCredentials: e.clientCredentials,
	}
	if cfg.Tokens.CodesEnabled() {
		e.grants[oauth.GrantAuthorizationCode] = e.authorizationCode
	}
	if cfg.Tokens.DevicesEnabled() {
		e.grants[oauth.GrantDeviceCode] = e.deviceCode
	}
	return e, nil
}

func (e *Endpoint) now() time.Time { return e.cfg.Now() }

// refusing reports whether token requests are refused now (Refusing).
func (e *Endpoint) refusing() bool { return e.cfg.Refusing != nil && e.cfg.Refusing() }

// Request is a token request, parsed once.
type Request struct {
	// GrantType is the grant_type parameter.
	GrantType string
	// Client is the authenticated client.
	Client *clients.Client
	// Form holds the body's parameters (each at most once, none empty).
	Form url.Values
	// Source is the caller's address.
	Source string
}

// ServeHTTP is POST /connect/token.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	contain.Point("identity.token")
	oauth.SecurityHeaders(w.Header(), e.cfg.HSTS)
	if r.Method == http.MethodOptions {
		oauth.Preflight(w, r, "POST", e.cfg.Clients.AnyAllowsOrigin)
		return
	}
	origin := r.Header.Get("Origin")
	if origin != "" && e.cfg.Clients.AnyAllowsOrigin(origin) {
		// The client is not known yet: errors before it is answer the
		// origins some client allows; success answers the client's own.
		oauth.AllowOrigin(w.Header(), origin)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		e.fail.Fail(w, r, "", "", oauth.MethodNotAllowed("the token endpoint takes POST"))
		return
	}
	if e.refusing() {
		e.fail.Fail(w, r, "", "", oauth.TemporarilyUnavailable(users.ErrAuditRefusing))
		return
	}
	form, perr := oauth.ReadForm(w, r)
	if perr != nil {
		e.fail.Fail(w, r, "", "", perr)
		return
	}
	req := &Request{GrantType: form.Get("grant_type"), Form: form}
	if req.Client, perr = e.cfg.Clients.Authenticate(r, form); perr != nil {
		e.fail.Fail(w, r, req.GrantType, form.Get("client_id"), perr)
		return
	}
	if origin != "" && !req.Client.AllowsOrigin(origin) {
		w.Header().Del("Access-Control-Allow-Origin")
	}
	resp, perr := e.dispatch(r, req)
	if perr != nil {
		e.fail.Fail(w, r, req.GrantType, req.Client.ID, perr)
		return
	}
	if e.cfg.Issued != nil {
		e.cfg.Issued(req.GrantType, req.Client.ID)
	}
	oauth.WriteJSON(w, http.StatusOK, resp)
}

// dispatch checks the grant type and runs its handler.
func (e *Endpoint) dispatch(r *http.Request, req *Request) (*tokens.Response, *oauth.Error) {
	if req.GrantType == "" {
		return nil, oauth.InvalidRequest("missing grant_type")
	}
	handle, supported := e.grants[req.GrantType]
	if !supported && (!oauth.KnownGrant(req.GrantType) || req.GrantType == oauth.GrantImplicit) {
		// Implicit is an authorization-endpoint flow: no token request
		// carries it, whatever the client may use.
		return nil, oauth.NewError(oauth.ErrUnsupportedGrantType, "unsupported grant_type")
	}
	if !req.Client.AllowsGrant(req.GrantType) {
		return nil, oauth.NewError(oauth.ErrUnauthorizedClient, "the client is not allowed this grant type")
	}
	if !supported {
		return nil, oauth.NewError(oauth.ErrUnsupportedGrantType, "unsupported grant_type")
	}
	req.Source = e.cfg.ClientIP(r)
	return handle(r.Context(), req)
}

// StoreUnavailable reports whether err says the store could not reach its
// database (store.ErrUnavailable): the endpoints answer it 503
// temporarily_unavailable, the client tries again later, and a refresh
// sent again after the outage gets the answer the first one would have
// had (tokens.Service.Refresh, the grace window).
func StoreUnavailable(err error) bool { return errors.Is(err, store.ErrUnavailable) }

// PasswordGrant runs the password grant for an authenticated client, as a
// token request would (the client must be allowed the grant; scope may be
// empty for the client's defaults): the entry point of the other front
// doors that take a password (the message gateway's AuthOwner).
func (e *Endpoint) PasswordGrant(ctx context.Context, c *clients.Client, username, password, scope, source string) (*tokens.Response, *oauth.Error) {
	if e.refusing() {
		return nil, oauth.TemporarilyUnavailable(users.ErrAuditRefusing)
	}
	if !c.AllowsGrant(oauth.GrantPassword) {
		return nil, oauth.NewError(oauth.ErrUnauthorizedClient, "the client is not allowed this grant type")
	}
	form := url.Values{"username": {username}, "password": {password}}
	if scope != "" {
		form.Set("scope", scope)
	}
	resp, perr := e.password(ctx, &Request{GrantType: oauth.GrantPassword, Client: c, Form: form, Source: source})
	if perr != nil && perr.Code == oauth.ErrServerError && StoreUnavailable(perr.Cause) {
		perr = oauth.TemporarilyUnavailable(perr.Cause)
	}
	if perr == nil && e.cfg.Issued != nil {
		e.cfg.Issued(oauth.GrantPassword, c.ID)
	}
	return resp, perr
}
