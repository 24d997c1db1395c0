package device

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/web"
)

// Names of the endpoints in logs and metrics.
const (
	EndpointName     = "device-authorization"
	VerificationName = "device-verification"
)

// Defaults of Config.
const (
	// DefaultLifetime is how long a device code and its user code live
	// (RFC 8628 §3.2 expires_in).
	DefaultLifetime = 10 * time.Minute
	// DefaultInterval is the least time between two polls.
	DefaultInterval = 5 * time.Second
	// retention keeps a record this long past its expiry, so that a late
	// exchange is told "used", not "unknown".
	retention = time.Hour
)

// Store is what the device flow keeps: the authorizations, and the
// counters of the rate limit.
type Store interface {
	store.DeviceCodes
	store.Counters
}

// Config configures the device flow.
type Config struct {
	// Issuer is the identity server's URL. Required.
	Issuer string
	// VerificationPath is the path of the verification page under the
	// issuer's host (it is the issuer's path plus /connect/device).
	// Required.
	VerificationPath string
	// Clients are the registered clients. Required.
	Clients *clients.Registry
	// Store keeps the authorizations and the counters. Required.
	Store Store
	// Users finds the user who decides (for the page's name). Required.
	Users store.Users
	// Sessions finds and starts login sessions. Required.
	Sessions *session.Manager
	// Guard makes and checks the anti-forgery tokens. Required.
	Guard *session.Guard
	// Passwords checks the login form. Required.
	Passwords *users.Checker
	// Pages renders. Required.
	Pages *web.Pages
	// UserCodeKey keys the user codes' hashes (32 bytes of a server
	// secret, the same on every instance). Required.
	UserCodeKey []byte
	// ClientIP is the request's source address. Required.
	ClientIP func(*http.Request) string
	// Lifetime is how long a device code lives. Default 10 minutes.
	Lifetime time.Duration
	// Interval is the least time between polls. Default 5 seconds.
	Interval time.Duration
	// Limits bound user-code entry. Default DefaultLimits.
	Limits Limits
	// HSTS is the Strict-Transport-Security of the JSON answers.
	HSTS string
	// UniformErrorStatus answers 400 for every client error.
	UniformErrorStatus bool
	// Failed, if set, counts a failure by endpoint and error code.
	Failed func(endpoint, code string)
	// Logger receives failures; Audit the decisions.
	Logger, Audit *zap.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Endpoint is the device authorization endpoint and the verification
// page. It is safe for concurrent use.
type Endpoint struct {
	cfg             Config
	fail            oauth.Failer
	verificationURI string
}

// New checks cfg and returns the endpoint.
func New(cfg Config) (*Endpoint, error) {
	if cfg.Issuer == "" || cfg.VerificationPath == "" || cfg.Clients == nil || cfg.Store == nil || cfg.Users == nil ||
		cfg.Sessions == nil || cfg.Guard == nil || cfg.Passwords == nil || cfg.Pages == nil || cfg.ClientIP == nil {
		return nil, errors.New("device flow: missing configuration")
	}
	if len(cfg.UserCodeKey) < 32 {
		return nil, errors.New("device flow: user-code key shorter than 32 bytes")
	}
	if cfg.Lifetime < 0 || cfg.Interval < 0 {
		return nil, errors.New("device flow: lifetime and interval must not be negative")
	}
	if cfg.Lifetime == 0 {
		cfg.Lifetime = DefaultLifetime
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Audit == nil {
		cfg.Audit = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	u, err := url.Parse(cfg.Issuer)
	if err != nil || u.Host == "" {
		return nil, errors.New("device flow: the issuer is not an absolute URL")
	}
	e := &Endpoint{cfg: cfg, verificationURI: u.Scheme + "://" + u.Host + cfg.VerificationPath}
	e.fail = oauth.Failer{Endpoint: EndpointName, Log: cfg.Logger, Count: cfg.Failed, Uniform: cfg.UniformErrorStatus,
		Unavailable: func(err error) bool { return errors.Is(err, store.ErrUnavailable) }}
	return e, nil
}

// authorizationResponse is RFC 8628 §3.2's answer.
type authorizationResponse struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int64  `json:"expires_in"`
	Interval                int64  `json:"interval"`
}

// ServeHTTP is POST /connect/deviceauthorization (RFC 8628 §3.1): the
// client authenticates as at the token endpoint (a public client sends
// its client_id), must be allowed the device_code grant, and may ask for
// scopes (its defaults when none) and for fewer market-data pairs than
// the user holds (authorization_details, RFC 9396 §6: kept with the
// device code and checked against the user's pairs at the token
// request, once the user is known).
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	oauth.SecurityHeaders(w.Header(), e.cfg.HSTS)
	if r.Method == http.MethodOptions {
		oauth.Preflight(w, r, "POST", e.cfg.Clients.AnyAllowsOrigin)
		return
	}
	origin := r.Header.Get("Origin")
	if origin != "" && e.cfg.Clients.AnyAllowsOrigin(origin) {
		oauth.AllowOrigin(w.Header(), origin)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		e.fail.Fail(w, r, "", "", oauth.MethodNotAllowed("the device authorization endpoint takes POST"))
		return
	}
	form, perr := oauth.ReadForm(w, r)
	if perr != nil {
		e.fail.Fail(w, r, "", "", perr)
		return
	}
	c, perr := e.cfg.Clients.Authenticate(r, form)
	if perr != nil {
		e.fail.Fail(w, r, "", form.Get("client_id"), perr)
		return
	}
	if origin != "" && !c.AllowsOrigin(origin) {
		w.Header().Del("Access-Control-Allow-Origin")
	}
	resp, perr := e.authorize(r, c, form)
	if perr != nil {
		e.fail.Fail(w, r, "", c.ID, perr)
		return
	}
	oauth.WriteJSON(w, http.StatusOK, resp)
}

// maxUserCodeTries bounds the draws of a user code that is taken.
const maxUserCodeTries = 5

// authorize stores a new pending authorization for c and returns its codes.
func (e *Endpoint) authorize(r *http.Request, c *clients.Client, form url.Values) (*authorizationResponse, *oauth.Error) {
	if !c.AllowsGrant(oauth.GrantDeviceCode) {
		return nil, oauth.NewError(oauth.ErrUnauthorizedClient, "the client is not allowed the device_code grant")
	}
	scopes, perr := c.RequestedScopes(form.Get("scope"))
	if perr != nil {
		return nil, perr
	}
	if len(scopes) == 0 {
		return nil, oauth.NewError(oauth.ErrInvalidScope, "no scope requested and the client has no default scopes")
	}
	// Malformed or of another type: refused before anything is counted
	// or stored, as at the authorization endpoint.
	asked, perr := oauth.AskedDetails(form)
	if perr != nil {
		return nil, perr
	}
	switch ok, err := e.admitAuthorization(r.Context(), r); {
	case err != nil:
		return nil, oauth.ServerError(err)
	case !ok:
		return nil, &oauth.Error{Code: oauth.ErrSlowDown, Status: http.StatusTooManyRequests,
			Description: "too many device authorizations from this address; try again later"}
	}
	deviceCode, err := newDeviceCode()
	if err != nil {
		return nil, oauth.ServerError(err)
	}
	now := e.cfg.Now()
	rec := store.DeviceCode{
		Hash: tokens.HashToken(deviceCode), ClientID: c.ID, Scopes: scopes, AskedEntitlements: asked, Created: now,
		ExpiresAt: now.Add(e.cfg.Lifetime), RetainUntil: now.Add(e.cfg.Lifetime + retention),
		Interval: e.cfg.Interval, State: store.DevicePending,
	}
	var userCode string
	for try := 0; ; try++ {
		if userCode, err = newUserCode(); err != nil {
			return nil, oauth.ServerError(err)
		}
		rec.UserCodeHash = e.hashUserCode(userCode)
		err = e.cfg.Store.PutDeviceCode(r.Context(), rec)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrAlreadyExists) || try == maxUserCodeTries {
			return nil, oauth.ServerError(err)
		}
	}
	fields := []zap.Field{zap.String("client_id", c.ID), zap.Strings("scopes", scopes)}
	if asked != nil {
		fields = append(fields, zap.Stringer("entitlements", *asked))
	}
	e.cfg.Audit.Info("device authorization started", fields...)
	shown := FormatUserCode(userCode)
	return &authorizationResponse{
		DeviceCode: deviceCode, UserCode: shown, VerificationURI: e.verificationURI,
		VerificationURIComplete: e.verificationURI + "?user_code=" + url.QueryEscape(shown),
		ExpiresIn:               int64(e.cfg.Lifetime / time.Second), Interval: int64(e.cfg.Interval / time.Second),
	}, nil
}

// clientName is how the pages name a client.
func clientName(c *clients.Client) string {
	if c.Name != "" {
		return c.Name
	}
	return c.ID
}

// trimmed is s without surrounding space.
func trimmed(s string) string { return strings.TrimSpace(s) }
