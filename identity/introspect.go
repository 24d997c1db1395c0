package identity

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// maxTokenParam bounds the token parameter of introspection and revocation
// (docs/design.md: a token 8 KiB).
const maxTokenParam = 8 << 10

// serveIntrospect is POST /connect/introspect (RFC 7662). Expired,
// revoked, malformed and foreign tokens are all just {"active": false}.
func (s *Server) serveIntrospect(w http.ResponseWriter, r *http.Request) {
	fail := s.failer("introspection")
	oauth.SecurityHeaders(w.Header(), s.cfg.HSTS)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		fail.Fail(w, r, "", "", oauth.MethodNotAllowed("the introspection endpoint takes POST"))
		return
	}
	form, perr := oauth.ReadForm(w, r)
	if perr != nil {
		fail.Fail(w, r, "", "", perr)
		return
	}
	caller, perr := s.clients.AuthenticateCaller(r, form)
	if perr != nil && perr.Code == oauth.ErrInvalidClient {
		// RFC 7662 §2.1 and §2.3: the caller must authenticate; missing or
		// wrong credentials are 401 with a challenge, however they came.
		perr.Basic = true
	}
	if perr == nil && caller.Client != nil && (caller.Client.Public || !caller.Client.Introspect) {
		perr = &oauth.Error{Code: oauth.ErrUnauthorizedClient, Description: "the client may not introspect tokens", Status: http.StatusForbidden}
	}
	if perr != nil {
		fail.Fail(w, r, "", form.Get("client_id"), perr)
		return
	}
	token := form.Get("token")
	if token == "" {
		fail.Fail(w, r, "", "", oauth.InvalidRequest("missing token"))
		return
	}
	inactive := map[string]any{"active": false}
	if len(token) > maxTokenParam {
		oauth.WriteJSON(w, http.StatusOK, inactive)
		return
	}
	var body map[string]any
	var err error
	if form.Get("token_type_hint") == "refresh_token" || strings.Count(token, ".") != 2 {
		body, err = s.introspectRefresh(r, caller, token)
		if err == nil && body == nil {
			body, err = s.introspectAccess(r, caller, token)
		}
	} else {
		body, err = s.introspectAccess(r, caller, token)
		if err == nil && body == nil {
			body, err = s.introspectRefresh(r, caller, token)
		}
	}
	if err != nil {
		fail.Fail(w, r, "", "", oauth.ServerError(err))
		return
	}
	if body == nil {
		body = inactive
	}
	oauth.WriteJSON(w, http.StatusOK, body)
}

// introspectAccess answers for an access token; nil when it is not an
// active one the caller may see.
func (s *Server) introspectAccess(r *http.Request, caller clients.Caller, token string) (map[string]any, error) {
	id, err := s.verifier.Verify(r.Context(), token)
	if err != nil {
		if ve, ok := errors.AsType[*verify.Error](err); ok && ve.Reason == verify.ReasonKeysUnavailable {
			return nil, err
		}
		return nil, nil
	}
	// Authoritative: read the store, not the verifier's periodic copy.
	claims := id.Claims()
	fid, _ := claims["fid"].(string)
	revoked, err := s.store.AccessTokenRevoked(r.Context(), id.JTI, fid, id.Subject, id.Authenticated())
	if err != nil {
		return nil, err
	}
	if revoked {
		return nil, nil
	}
	// An entitlement change after the token's issue ends it as a
	// revocation does (the token's authorization_details are no longer
	// the user's).
	change, err := s.store.EntitlementChange(r.Context(), id.Subject)
	switch {
	case err == nil && change.Narrows(id.IssuedAt, id.Entitlements):
		return nil, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	if caller.Resource != "" && !audienceHolds(claims["aud"], caller.Resource) {
		return nil, nil
	}
	body := make(map[string]any, len(claims)+2)
	for k, v := range claims {
		body[k] = v
	}
	body["active"] = true
	body["token_type"] = "access_token"
	return body, nil
}

// introspectRefresh answers for a refresh token of the calling client;
// nil when it is not an active one.
func (s *Server) introspectRefresh(r *http.Request, caller clients.Caller, token string) (map[string]any, error) {
	if caller.Client == nil {
		return nil, nil
	}
	fam, exp, ok, err := s.tokens.Lookup(r.Context(), token)
	if err != nil || !ok || fam.ClientID != caller.Client.ID {
		return nil, err
	}
	iat := fam.RotatedAt
	if iat.IsZero() {
		iat = fam.Created
	}
	return map[string]any{
		"active": true, "token_type": "refresh_token", "client_id": fam.ClientID, "sub": fam.Subject,
		"scope": strings.Join(fam.Scopes, " "), "iat": iat.Unix(), "exp": exp.Unix(), "iss": s.cfg.Issuer,
	}, nil
}

// audienceHolds reports whether an "aud" claim value holds name.
func audienceHolds(aud any, name string) bool {
	switch a := aud.(type) {
	case string:
		return a == name
	case []any:
		return slices.ContainsFunc(a, func(v any) bool { return v == name })
	}
	return false
}
