package identity

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// maxIntrospectToken bounds the token parameter (DESIGN.md: a token 8 KiB).
const maxIntrospectToken = 8 << 10

// newResources checks the API resources: unique names that no client
// uses, and at least one SHA-256 secret each.
func newResources(list []APIResource, clients map[string]*client) (map[string]APIResource, error) {
	out := make(map[string]APIResource, len(list))
	for _, r := range list {
		if r.Name == "" {
			return nil, errors.New("API resource with an empty name")
		}
		if _, dup := out[r.Name]; dup {
			return nil, fmt.Errorf("API resource %q registered twice", r.Name)
		}
		if _, clash := clients[r.Name]; clash {
			return nil, fmt.Errorf("API resource %q has the name of a client", r.Name)
		}
		if len(r.SecretHashes) == 0 {
			return nil, fmt.Errorf("API resource %q needs a secret", r.Name)
		}
		for _, h := range r.SecretHashes {
			if len(h) != sha256.Size {
				return nil, fmt.Errorf("API resource %q: a secret hash must be a SHA-256 digest", r.Name)
			}
		}
		out[r.Name] = r
	}
	return out, nil
}

// introspector is who called introspection: a client allowed to, or an
// API resource (which sees only tokens of its audience).
type introspector struct {
	client   *client
	resource string
}

// authenticateIntrospector authenticates an API resource by name and
// secret, or else a confidential client allowed to introspect.
func (s *Server) authenticateIntrospector(r *http.Request, form url.Values) (introspector, *Error) {
	id, secret, basic, perr := basicCredentials(r)
	if perr != nil {
		return introspector{}, perr
	}
	if !basic {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	if res, ok := s.resources[id]; ok {
		sum := sha256.Sum256([]byte(secret))
		match := 0
		for _, h := range res.SecretHashes {
			match |= subtle.ConstantTimeCompare(sum[:], h)
		}
		if secret == "" || match != 1 {
			return introspector{}, &Error{Code: ErrCodeInvalidClient, Description: "client authentication failed", Basic: basic, Cause: errors.New("wrong API resource secret")}
		}
		return introspector{resource: id}, nil
	}
	c, perr := s.authenticateClient(r, form)
	if perr != nil {
		return introspector{}, perr
	}
	if c.Public || !c.Introspect {
		return introspector{}, &Error{Code: ErrCodeUnauthorizedClient, Description: "the client may not introspect tokens", Status: http.StatusForbidden}
	}
	return introspector{client: c}, nil
}

// serveIntrospect is POST /connect/introspect (RFC 7662). Expired,
// revoked, malformed and foreign tokens are all just {"active": false}.
func (s *Server) serveIntrospect(w http.ResponseWriter, r *http.Request) {
	noStore(w.Header(), s.cfg.HSTS)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		s.fail(w, r, "", "", &Error{Code: ErrCodeInvalidRequest, Description: "the introspection endpoint takes POST", Status: http.StatusMethodNotAllowed})
		return
	}
	form, perr := readForm(w, r)
	if perr != nil {
		s.fail(w, r, "", "", perr)
		return
	}
	caller, perr := s.authenticateIntrospector(r, form)
	if perr != nil {
		s.fail(w, r, "", form.Get("client_id"), perr)
		return
	}
	token := form.Get("token")
	if token == "" {
		s.fail(w, r, "", "", invalidRequest("missing token"))
		return
	}
	inactive := map[string]any{"active": false}
	if len(token) > maxIntrospectToken {
		writeJSON(w, http.StatusOK, inactive)
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
		s.fail(w, r, "", "", serverError(err))
		return
	}
	if body == nil {
		body = inactive
	}
	writeJSON(w, http.StatusOK, body)
}

// introspectAccess answers for an access token; nil when it is not an
// active one the caller may see.
func (s *Server) introspectAccess(r *http.Request, caller introspector, token string) (map[string]any, error) {
	id, err := s.verifier.Verify(r.Context(), token)
	if err != nil {
		var ve *verify.Error
		if errors.As(err, &ve) && ve.Reason == verify.ReasonKeysUnavailable {
			return nil, err
		}
		return nil, nil
	}
	// Authoritative: read the store, not the verifier's periodic copy.
	if id.JTI != "" {
		revoked, err := s.store.AccessTokenRevoked(r.Context(), id.JTI)
		if err != nil {
			return nil, err
		}
		if revoked {
			return nil, nil
		}
	}
	if caller.resource != "" && !audienceHolds(id.Claims()["aud"], caller.resource) {
		return nil, nil
	}
	claims := id.Claims()
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
func (s *Server) introspectRefresh(r *http.Request, caller introspector, token string) (map[string]any, error) {
	if caller.client == nil || len(token) > maxRefreshTokenLen {
		return nil, nil
	}
	rec, fam, err := s.store.RefreshToken(r.Context(), hashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	if fam.ClientID != caller.client.ID || !fam.RevokedAt.IsZero() || !rec.RotatedAt.IsZero() ||
		!now.Before(rec.ExpiresAt) || !now.Before(fam.ExpiresAt) {
		return nil, nil
	}
	return map[string]any{
		"active": true, "token_type": "refresh_token", "client_id": fam.ClientID, "sub": fam.Subject,
		"scope": strings.Join(fam.Scopes, " "), "iat": rec.IssuedAt.Unix(), "exp": rec.ExpiresAt.Unix(), "iss": s.cfg.Issuer,
	}, nil
}

func audienceHolds(aud any, name string) bool {
	switch a := aud.(type) {
	case string:
		return a == name
	case []any:
		return slices.ContainsFunc(a, func(v any) bool { return v == name })
	}
	return false
}
