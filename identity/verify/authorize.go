package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// DefaultRealm is the realm of challenges when a Requirement names none.
const DefaultRealm = "gatehouse"

// Requirement is what a protected resource asks of an access token. It is
// a plain value: build it once, then share it between goroutines without
// changing its Scopes.
type Requirement struct {
	// Scopes are the scopes a token must grant: all of them, or one of
	// them with AnyScope. None: any valid token passes.
	Scopes []string
	// AnyScope lets a token that grants any one of Scopes pass.
	AnyScope bool
	// Realm is the realm of the WWW-Authenticate challenge. Default
	// DefaultRealm.
	Realm string
	// ACRValues, if set, are the authentication classes a token's acr
	// must be one of (e.g. the multi-factor class): a token of another
	// class, or of none, is refused with insufficient_user_authentication
	// and the classes in the challenge (RFC 9470 §3), for the client to
	// step up at the authorization endpoint with acr_values.
	ACRValues []string
}

// Validate checks the requirement: each scope a scope-token of RFC 6749
// §3.3, AnyScope only with scopes, and a realm fit for a quoted-string. It
// changes nothing.
func (req Requirement) Validate() error {
	for _, s := range req.Scopes {
		if !validScope(s) {
			return fmt.Errorf("bad scope %q", s)
		}
	}
	if req.AnyScope && len(req.Scopes) == 0 {
		return errors.New("any_scope without scopes")
	}
	if !QuoteSafe(req.Realm) {
		return fmt.Errorf("realm %q holds a quote, a backslash or a non-printable character", req.Realm)
	}
	for _, a := range req.ACRValues {
		if !validScope(a) {
			return fmt.Errorf("bad acr value %q: printable ASCII without space, quote or backslash", a)
		}
	}
	return nil
}

// authenticatedBy reports whether id's acr claim is one of the classes
// required (any, when none is).
func (req Requirement) authenticatedBy(id *Identity) bool {
	if len(req.ACRValues) == 0 {
		return true
	}
	acr, _ := id.Claims()["acr"].(string)
	return slices.Contains(req.ACRValues, acr)
}

// validScope reports whether s is a scope-token (RFC 6749 §3.3: one or
// more of %x21 / %x23-5B / %x5D-7E).
func validScope(s string) bool {
	return s != "" && QuoteSafe(s) && !strings.Contains(s, " ")
}

// SatisfiedBy reports whether id grants the required scopes.
func (req Requirement) SatisfiedBy(id *Identity) bool {
	if req.AnyScope {
		return slices.ContainsFunc(req.Scopes, id.HasScope)
	}
	for _, s := range req.Scopes {
		if !id.HasScope(s) {
			return false
		}
	}
	return true
}

func (req Requirement) realm() string {
	if req.Realm == "" {
		return DefaultRealm
	}
	return req.Realm
}

// Reasons of a refused request that are not about the token itself, for
// Refusal.Reason next to the token Reasons.
const (
	ReasonNoToken           Reason = "no_token"           // no Authorization header
	ReasonMalformedHeader   Reason = "malformed_header"   // not one "Bearer <token>" header
	ReasonInsufficientScope Reason = "insufficient_scope" // a valid token without the required scopes
	// ReasonInsufficientAuthentication: a valid token whose acr is not a
	// class the resource requires.
	ReasonInsufficientAuthentication Reason = "insufficient_user_authentication"
)

// Refusal is a request Authorize refused, as RFC 6750 §3 answers it. What
// the client reads (Status, Code, Description, Realm, Scope) is apart from
// what only the log may read (Cause); Reason is for both logs and metrics.
// None of it carries the token.
//
// A Refusal belongs to the goroutine that got it from Authorize.
type Refusal struct {
	// Status is the HTTP status: 401, 400 or 403.
	Status int
	// Code is the RFC 6750 §3.1 error code; empty when the request held
	// no token at all (§3.1: no error information then).
	Code string
	// Description is the error_description, fit for the client.
	Description string
	// Reason names the refusal for logs and metrics: one of the token
	// Reasons, or ReasonNoToken, ReasonMalformedHeader,
	// ReasonInsufficientScope.
	Reason Reason
	// Realm is the challenge's realm.
	Realm string
	// Scope is the scope the resource needs, space-separated; set for
	// insufficient_scope only.
	Scope string
	// ACRValues are the classes the resource needs, space-separated; set
	// for insufficient_user_authentication only.
	ACRValues string
	// Cause is internal detail for the log only; may be nil.
	Cause error
}

// Authorize checks the request's bearer token (RFC 6750 §2.1: the
// Authorization header only, never the URL or the body), the scopes req
// asks for and its authentication class. It returns the token's identity,
// or a Refusal that says how to answer: no token, 401 without an error
// code; a malformed Authorization header, 400 invalid_request; a refused
// token, 401 invalid_token; missing scopes, 403 insufficient_scope;
// another acr than req's, 401 insufficient_user_authentication (RFC 9470).
//
// Safe for concurrent use, like every method of Verifier.
func (v *Verifier) Authorize(r *http.Request, req Requirement) (*Identity, *Refusal) {
	token, err := BearerToken(r)
	switch {
	case errors.Is(err, ErrNoToken):
		return nil, &Refusal{Status: http.StatusUnauthorized, Description: "this resource needs an access token",
			Reason: ReasonNoToken, Realm: req.realm()}
	case err != nil:
		return nil, &Refusal{Status: http.StatusBadRequest, Code: BearerInvalidRequest,
			Description: "the Authorization header is malformed", Reason: ReasonMalformedHeader, Realm: req.realm(), Cause: err}
	}
	id, err := v.Verify(r.Context(), token)
	if err != nil {
		reason := ReasonMalformed
		if e, ok := errors.AsType[*Error](err); ok {
			reason = e.Reason
		}
		return nil, &Refusal{Status: http.StatusUnauthorized, Code: BearerInvalidToken, Description: Description(err),
			Reason: reason, Realm: req.realm(), Cause: err}
	}
	if !req.SatisfiedBy(id) {
		return nil, &Refusal{Status: http.StatusForbidden, Code: BearerInsufficientScope,
			Description: "the access token lacks a required scope", Reason: ReasonInsufficientScope,
			Realm: req.realm(), Scope: strings.Join(req.Scopes, " ")}
	}
	if !req.authenticatedBy(id) {
		return nil, &Refusal{Status: http.StatusUnauthorized, Code: BearerInsufficientUserAuthentication,
			Description: "the access token's authentication is not enough for this resource: sign in again with acr_values",
			Reason:      ReasonInsufficientAuthentication, Realm: req.realm(), ACRValues: strings.Join(req.ACRValues, " ")}
	}
	return id, nil
}

// Challenge is the refusal's WWW-Authenticate value (RFC 6750 §3): the
// realm alone without a token, else the error code and description, and
// the scope for insufficient_scope.
func (f *Refusal) Challenge() string {
	switch f.Code {
	case "":
		return Challenge(f.Realm, "", "", "")
	case BearerInsufficientScope:
		return Challenge(f.Realm, f.Code, f.Description, f.Scope)
	case BearerInsufficientUserAuthentication:
		return Challenge(f.Realm, f.Code, f.Description, "") + `, acr_values="` + quoteSafe(f.ACRValues) + `"`
	}
	return Challenge(f.Realm, f.Code, f.Description, "")
}

// Write answers the request: the status, the challenge, Cache-Control:
// no-store, and a small JSON body {"error", "error_description"} ("error"
// left out without a code). Call it once, on the request's goroutine.
func (f *Refusal) Write(w http.ResponseWriter) {
	hdr := w.Header()
	hdr.Set("WWW-Authenticate", f.Challenge())
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Cache-Control", "no-store")
	body, _ := json.Marshal(refusalBody{f.Code, f.Description})
	w.WriteHeader(f.Status)
	_, _ = w.Write(append(body, '\n'))
}

type refusalBody struct {
	Error       string `json:"error,omitempty"`
	Description string `json:"error_description"`
}
