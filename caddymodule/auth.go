package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
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
// without the required scopes, 403 insufficient_scope.
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
	// with AnyScope. Default: none (any valid token passes).
	Scopes []string `json:"scopes,omitempty"`

	// AnyScope lets a token that grants any one of Scopes pass. Default
	// false (all are required).
	AnyScope bool `json:"any_scope,omitempty"`

	// Realm is the realm of the WWW-Authenticate challenge. Default
	// "gatehouse".
	Realm string `json:"realm,omitempty"`

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

	verifier *verify.Verifier
	logger   *zap.Logger
	realm    string
	strip    map[string]bool // normalized names of the headers to delete
	scope    string          // the required scopes, space-separated, for challenges
}

// CaddyModule returns the Caddy module information.
func (AuthHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.gatehouse_auth",
		New: func() caddy.Module { return new(AuthHandler) },
	}
}

// Provision finds the gatehouse app's verifier and prepares the header
// lists.
func (h *AuthHandler) Provision(ctx caddy.Context) error {
	appIface, err := ctx.AppIfConfigured("gatehouse")
	if err != nil {
		return fmt.Errorf("gatehouse_auth needs the gatehouse app (the gatehouse global option): %w", err)
	}
	v := appIface.(*App).Verifier()
	if v == nil {
		return errors.New("gatehouse app has no verifier")
	}
	h.setUp(v, ctx.Logger())
	return nil
}

// setUp fills the handler's runtime state.
func (h *AuthHandler) setUp(v *verify.Verifier, logger *zap.Logger) {
	h.verifier, h.logger = v, logger
	h.realm = h.Realm
	if h.realm == "" {
		h.realm = "gatehouse"
	}
	h.strip = map[string]bool{}
	for name := range h.Headers {
		h.strip[normalizeHeaderName(name)] = true
	}
	for _, name := range h.StripHeaders {
		h.strip[normalizeHeaderName(name)] = true
	}
	h.scope = strings.Join(h.Scopes, " ")
}

// Validate checks the configuration. It changes nothing.
func (h *AuthHandler) Validate() error {
	for _, s := range h.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\"\\") {
			return fmt.Errorf("gatehouse_auth: bad scope %q", s)
		}
	}
	if h.AnyScope && len(h.Scopes) == 0 {
		return errors.New("gatehouse_auth: any_scope without scopes")
	}
	if strings.ContainsFunc(h.Realm, func(r rune) bool { return r < 0x20 || r > 0x7e || r == '"' || r == '\\' }) {
		return fmt.Errorf("gatehouse_auth: realm %q holds a quote, a backslash or a non-printable character", h.Realm)
	}
	for name, templates := range h.Headers {
		if !validHeaderName(name) {
			return fmt.Errorf("gatehouse_auth: bad header name %q", name)
		}
		if len(templates) == 0 {
			return fmt.Errorf("gatehouse_auth: header %q has no value", name)
		}
		if strings.EqualFold(name, "Authorization") {
			return errors.New("gatehouse_auth: the Authorization header cannot be set")
		}
	}
	for _, name := range h.StripHeaders {
		if !validHeaderName(name) {
			return fmt.Errorf("gatehouse_auth: bad header name %q", name)
		}
	}
	return nil
}

// ServeHTTP checks the request's access token, then calls next.
func (h *AuthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	token, err := verify.BearerToken(r)
	switch {
	case errors.Is(err, verify.ErrNoToken):
		h.refuse(w, http.StatusUnauthorized, "", "this resource needs an access token", "no_token")
		return nil
	case err != nil:
		h.refuse(w, http.StatusBadRequest, verify.BearerInvalidRequest, "the Authorization header is malformed", "malformed_header")
		return nil
	}
	id, err := h.verifier.Verify(r.Context(), token)
	if err != nil {
		reason := "invalid"
		if e, ok := errors.AsType[*verify.Error](err); ok {
			reason = string(e.Reason)
		}
		h.refuse(w, http.StatusUnauthorized, verify.BearerInvalidToken, verify.Description(err), reason)
		return nil
	}
	if !h.scopesGranted(id) {
		h.refuse(w, http.StatusForbidden, verify.BearerInsufficientScope, "the access token lacks a required scope", "insufficient_scope")
		return nil
	}

	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	setIdentityPlaceholders(repl, id)
	if len(h.strip) > 0 {
		for name := range r.Header {
			if h.strip[normalizeHeaderName(name)] {
				delete(r.Header, name)
			}
		}
	}
	for name, templates := range h.Headers {
		for _, t := range templates {
			if v := repl.ReplaceAll(t, ""); v != "" && validHeaderValue(v) {
				r.Header.Add(name, v)
			}
		}
	}
	if h.StripAuthorization {
		r.Header.Del("Authorization")
	}
	return next.ServeHTTP(w, r)
}

// scopesGranted reports whether id grants the required scopes.
func (h *AuthHandler) scopesGranted(id *verify.Identity) bool {
	if h.AnyScope {
		return slices.ContainsFunc(h.Scopes, id.HasScope)
	}
	for _, s := range h.Scopes {
		if !id.HasScope(s) {
			return false
		}
	}
	return true
}

// refuse answers a request that may not pass (RFC 6750 §3) and logs the
// reason at Debug, never the token.
func (h *AuthHandler) refuse(w http.ResponseWriter, status int, code, description, reason string) {
	if ce := h.logger.Check(zapcore.DebugLevel, "access refused"); ce != nil {
		ce.Write(zap.Int("status", status), zap.String("reason", reason))
	}
	challenge := verify.Challenge(h.realm, "", "", "")
	switch code {
	case "":
		// No credentials: the challenge carries no error information (RFC
		// 6750 §3.1).
	case verify.BearerInsufficientScope:
		challenge = verify.Challenge(h.realm, code, description, h.scope)
	default:
		challenge = verify.Challenge(h.realm, code, description, "")
	}
	hdr := w.Header()
	hdr.Set("WWW-Authenticate", challenge)
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Cache-Control", "no-store")
	body, _ := json.Marshal(struct {
		Error       string `json:"error,omitempty"`
		Description string `json:"error_description"`
	}{code, description})
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
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

// normalizeHeaderName folds a header name for comparison: lower case, "_"
// as "-".
func normalizeHeaderName(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// validHeaderName reports whether name is an HTTP token (RFC 9110 §5.1).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v may be sent as a header value: no
// control characters but tab.
func validHeaderValue(v string) bool {
	return !strings.ContainsFunc(v, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f })
}

// Interface guards
var (
	_ caddy.Provisioner           = (*AuthHandler)(nil)
	_ caddy.Validator             = (*AuthHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*AuthHandler)(nil)
)
