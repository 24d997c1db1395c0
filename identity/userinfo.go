package identity

import (
	"errors"
	"net/http"

	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/verify"
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
	token, err := verify.BearerToken(r)
	if err != nil || r.URL.Query().Has("access_token") {
		code, desc, status := "", "", http.StatusUnauthorized
		if !errors.Is(err, verify.ErrNoToken) || r.URL.Query().Has("access_token") {
			code, desc, status = verify.BearerInvalidRequest, "send the access token in the Authorization header", http.StatusBadRequest
		}
		h.Set("WWW-Authenticate", verify.Challenge(bearerRealm, code, desc, ""))
		w.WriteHeader(status)
		return
	}
	id, err := s.verifier.Verify(r.Context(), token)
	if err != nil {
		h.Set("WWW-Authenticate", verify.Challenge(bearerRealm, verify.BearerInvalidToken, verify.Description(err), ""))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if c, ok := s.clients.Client(id.ClientID); ok && c.AllowsOrigin(origin) {
			oauth.AllowOrigin(h, origin)
		}
	}
	if !id.HasScope(oauth.ScopeOpenID) {
		h.Set("WWW-Authenticate", verify.Challenge(bearerRealm, verify.BearerInsufficientScope, "the access token lacks the openid scope", oauth.ScopeOpenID))
		w.WriteHeader(http.StatusForbidden)
		return
	}
	user, err := s.store.UserBySubject(r.Context(), id.Subject)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && user.Disabled):
		h.Set("WWW-Authenticate", verify.Challenge(bearerRealm, verify.BearerInvalidToken, "the user is unknown or disabled", ""))
		w.WriteHeader(http.StatusUnauthorized)
		return
	case err != nil:
		s.failer("userinfo").Fail(w, r, "", id.ClientID, oauth.ServerError(err))
		return
	}
	oauth.WriteJSON(w, http.StatusOK, userinfoBody{Subject: id.Subject, ProfileClaims: tokens.UserClaims(&user, id.Scopes)})
}

type userinfoBody struct {
	Subject string `json:"sub"`
	tokens.ProfileClaims
}
