package identity

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/verify"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// bearerRealm is the realm of Bearer challenges.
const bearerRealm = "gatehouse"

// serveUserinfo is GET|POST /connect/userinfo (OpenID Connect Core §5.3):
// a bearer access token holding openid gets the claims its scopes grant.
func (s *Server) serveUserinfo(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	if r.Method == http.MethodOptions {
		oauth.Preflight(w, r, "GET, POST", s.clients.AnyAllowsOrigin)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		h.Set("Allow", "GET, POST, OPTIONS")
		s.failer("userinfo").Fail(w, r, "", "", oauth.MethodNotAllowed("the userinfo endpoint takes GET or POST"))
		return
	}
	refuse := func(f *verify.Refusal) {
		if ce := s.log.Check(zapcore.DebugLevel, "request failed"); ce != nil {
			ce.Write(zap.String("endpoint", "userinfo"), zap.String("remote_addr", r.RemoteAddr),
				zap.String("reason", string(f.Reason)), zap.NamedError("cause", f.Cause))
		}
		if f.Code != "" { // no token is a challenge, not a failure (RFC 6750 §3.1)
			s.countFailed("userinfo", f.Code)
		}
		f.Write(w)
	}
	if r.URL.Query().Has("access_token") {
		// RFC 6750 §2.3 allows a token in the URL; we never read one there.
		refuse(&verify.Refusal{Status: http.StatusBadRequest, Code: verify.BearerInvalidRequest,
			Description: "send the access token in the Authorization header", Reason: verify.ReasonMalformedHeader, Realm: bearerRealm})
		return
	}
	id, refusal := s.verifier.Authorize(r, verify.Requirement{Realm: bearerRealm})
	if refusal != nil {
		refuse(refusal)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if c, ok := s.clients.Client(id.ClientID); ok && c.AllowsOrigin(origin) {
			oauth.AllowOrigin(h, origin)
		}
	}
	if !id.HasScope(oauth.ScopeOpenID) {
		refuse(&verify.Refusal{Status: http.StatusForbidden, Code: verify.BearerInsufficientScope,
			Description: "the access token lacks the openid scope", Reason: verify.ReasonInsufficientScope,
			Realm: bearerRealm, Scope: oauth.ScopeOpenID})
		return
	}
	user, err := s.store.UserBySubject(r.Context(), id.Subject)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && user.Disabled):
		refuse(&verify.Refusal{Status: http.StatusUnauthorized, Code: verify.BearerInvalidToken,
			Description: "the user is unknown or disabled", Reason: verify.ReasonRevoked, Realm: bearerRealm})
		return
	case err != nil:
		s.failer("userinfo").Fail(w, r, "", id.ClientID, oauth.ServerError(err))
		return
	}
	body := userinfoBody{Subject: id.Subject, ProfileClaims: tokens.UserClaims(&user, id.Scopes)}
	if !id.Entitlements.IsEmpty() {
		body.AuthorizationDetails = id.Entitlements.MarshalDetails()
	}
	oauth.WriteJSON(w, http.StatusOK, body)
}

type userinfoBody struct {
	Subject string `json:"sub"`
	tokens.ProfileClaims
	// AuthorizationDetails are the market-data pairs the access token
	// grants (RFC 9396 §9.1's claim), when it grants any.
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
}
