package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gatehouse/gatehouse/identity/verify"
)

func init() {
	caddy.RegisterModule(AuthHandler{})
}

// AuthHandler protects a route with an access token: it takes the bearer
// token of the Authorization header (RFC 6750 §2.1; never one in the URL),
// checks it with the gatehouse app's verifier, checks its scopes, and only
// then calls the next handler, with the identity in placeholders and, if
// configured, in request headers. It needs the gatehouse app.
//
// Answers (RFC 6750 §3), each with WWW-Authenticate and a small JSON body
// {"error", "error_description"}: no token, 401 without an error code; a
// malformed Authorization header, 400 invalid_request; a refused token
// (bad signature, expired, revoked, ...), 401 invalid_token; a token
// without the required scopes, 403 insufficient_scope; a token whose acr
// is not one of acr_values, 401 insufficient_user_authentication.
//
// On success it sets these placeholders:
//
//	{http.auth.user.id}             the subject ("sub")
//	{http.auth.user.client_id}      the client the token was issued to
//	{http.auth.user.scopes}         the granted scopes, space-separated
//	{http.auth.user.exp}            the expiry, in Unix seconds
//	{http.auth.user.claims.<name>}  a string or number claim
type AuthHandler struct {
	// Scopes are the scopes a token must grant: all of them, or one of them
	// with AnyScope. Each is a scope-token (RFC 6749 §3.3: printable ASCII
	// without space, '"' or '\'). Default: none (any valid token passes).
	Scopes []string `json:"scopes,omitempty"`

	// AnyScope lets a token that grants any one of Scopes pass. Default
	// false (all are required).
	AnyScope bool `json:"any_scope,omitempty"`

	// Realm is the realm of the WWW-Authenticate challenge. Default
	// "gatehouse".
	Realm string `json:"realm,omitempty"`

	// ACRValues are the authentication classes a token's acr must be one
	// of, e.g. "https://refeds.org/profile/mfa" for a second factor. A
	// token of another class (a password alone), or of none (client
	// credentials), gets 401 insufficient_user_authentication with
	// acr_values in the challenge (RFC 9470), which tells the client to
	// sign in again asking for them. Default: none (any class).
	ACRValues []string `json:"acr_values,omitempty"`

	// Headers are request headers set for the next handlers (e.g. a
	// reverse_proxy) from placeholder templates, e.g. {"X-Auth-User":
	// ["{http.auth.user.id}"]}; each template gives one value, and a value
	// that is empty (e.g. an absent claim) or holds control characters is
	// left out. Every header named here is first deleted from the request,
	// so a client can never pass its own copy upstream. Default: none.
	Headers map[string][]string `json:"headers,omitempty"`

	// StripHeaders are request headers deleted before the next handlers,
	// e.g. identity headers a later header_up sets or adds. Names match
	// case-insensitively and with "_" for "-" (X_Auth_User is X-Auth-User
	// to many backends). Headers named in Headers are stripped the same
	// way. Default: none.
	StripHeaders []string `json:"strip_headers,omitempty"`

	// StripAuthorization removes the Authorization header after the check,
	// so the token does not travel upstream. Default false (the backend
	// gets it too).
	StripAuthorization bool `json:"strip_authorization,omitempty"`

	verifier    *verify.Verifier
	logger      *zap.Logger
	requirement verify.Requirement
	headers     *verify.HeaderPolicy
}

// CaddyModule returns the Caddy module information.
func (AuthHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.gatehouse_auth",
		New: func() caddy.Module { return new(AuthHandler) },
	}
}

// Provision finds the gatehouse app's verifier and compiles the header
// policy.
func (h *AuthHandler) Provision(ctx caddy.Context) error {
	appIface, err := ctx.AppIfConfigured("gatehouse")
	if err != nil {
		return fmt.Errorf("gatehouse_auth needs the gatehouse app (the gatehouse global option): %w", err)
	}
	v := appIface.(*App).Verifier()
	if v == nil {
		return errors.New("gatehouse app has no verifier")
	}
	return h.setUp(v, ctx.Logger())
}

// setUp fills the handler's runtime state.
func (h *AuthHandler) setUp(v *verify.Verifier, logger *zap.Logger) error {
	headers, err := verify.NewHeaderPolicy(h.Headers, h.StripHeaders, h.StripAuthorization)
	if err != nil {
		return fmt.Errorf("gatehouse_auth: %w", err)
	}
	h.verifier, h.logger, h.headers = v, logger, headers
	h.requirement = h.requirementOf()
	return nil
}

// requirementOf is what the configuration asks of a token.
func (h *AuthHandler) requirementOf() verify.Requirement {
	return verify.Requirement{Scopes: h.Scopes, AnyScope: h.AnyScope, Realm: h.Realm, ACRValues: h.ACRValues}
}

// Validate checks the configuration with the rules of verify. It changes
// nothing.
func (h *AuthHandler) Validate() error {
	if err := h.requirementOf().Validate(); err != nil {
		return fmt.Errorf("gatehouse_auth: %w", err)
	}
	if err := verify.ValidateHeaderPolicy(h.Headers, h.StripHeaders); err != nil {
		return fmt.Errorf("gatehouse_auth: %w", err)
	}
	return nil
}

// ServeHTTP checks the request's access token, then calls next with the
// identity in placeholders and headers. A request that announces as a
// trailer a header the policy sets or strips is refused (400): the
// trailers come after the body, past what the policy can rewrite, and a
// proxy passes them on.
func (h *AuthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if h.trailerProtected(r) {
		http.Error(w, "a header the gateway sets or strips cannot be sent as a trailer", http.StatusBadRequest)
		return nil
	}
	if r.Body != nil && r.Body != http.NoBody {
		// A client may send trailers it did not announce, and net/http keeps
		// them: the body fails at its end if one is protected, before a proxy
		// writes the trailer section on.
		r.Body = &trailerGuard{ReadCloser: r.Body, r: r, headers: h.headers}
	}
	id, refusal := h.verifier.Authorize(r, h.requirement)
	if refusal != nil {
		// Never the token: the reason, and the cause at most.
		if ce := h.logger.Check(zapcore.DebugLevel, "access refused"); ce != nil {
			ce.Write(zap.Int("status", refusal.Status), zap.String("reason", string(refusal.Reason)), zap.NamedError("cause", refusal.Cause))
		}
		refusal.Write(w)
		return nil
	}
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	setIdentityPlaceholders(repl, id)
	h.headers.Apply(r.Header, func(template string) string { return repl.ReplaceAll(template, "") })
	return next.ServeHTTP(w, r)
}

// errProtectedTrailer fails a request body whose trailers hold a header the
// policy sets or strips.
var errProtectedTrailer = errors.New("a header the gateway sets or strips was sent as a trailer")

// trailerGuard is a request body that fails, instead of ending, when the
// trailers read with it hold a protected header (net/http fills r.Trailer
// as the body ends).
type trailerGuard struct {
	io.ReadCloser
	r       *http.Request
	headers *verify.HeaderPolicy
}

func (g *trailerGuard) Read(p []byte) (int, error) {
	n, err := g.ReadCloser.Read(p)
	if err == io.EOF {
		for name := range g.r.Trailer {
			if g.headers.Protected(name) {
				return n, errProtectedTrailer
			}
		}
	}
	return n, err
}

// trailerProtected reports whether r announces a protected header as a
// trailer (its Trailer header, which net/http has read into r.Trailer's
// keys).
func (h *AuthHandler) trailerProtected(r *http.Request) bool {
	for name := range r.Trailer {
		if h.headers.Protected(name) {
			return true
		}
	}
	for _, v := range r.Header.Values("Trailer") {
		for name := range strings.SplitSeq(v, ",") {
			if h.headers.Protected(strings.TrimSpace(name)) {
				return true
			}
		}
	}
	return false
}

// claimPlaceholderPrefix prefixes the placeholders of claims.
const claimPlaceholderPrefix = "http.auth.user.claims."

// setIdentityPlaceholders sets the {http.auth.user.*} placeholders of id.
func setIdentityPlaceholders(repl *caddy.Replacer, id *verify.Identity) {
	repl.Set("http.auth.user.id", id.Subject)
	repl.Set("http.auth.user.client_id", id.ClientID)
	repl.Set("http.auth.user.scopes", strings.Join(id.Scopes, " "))
	repl.Set("http.auth.user.exp", strconv.FormatInt(id.Expiry.Unix(), 10))
	repl.Map(func(key string) (any, bool) {
		name, ok := strings.CutPrefix(key, claimPlaceholderPrefix)
		if !ok {
			return nil, false
		}
		switch v := id.Claims()[name].(type) {
		case string:
			return v, true
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64), true
		case json.Number:
			return v.String(), true
		}
		return nil, false
	})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*AuthHandler)(nil)
	_ caddy.Validator             = (*AuthHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*AuthHandler)(nil)
)
