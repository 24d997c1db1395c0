package identity

import (
	"net/http"
	"net/url"
	"slices"
)

// grantClientCredentials is the client credentials grant (RFC 6749 §4.4):
// the client acts for itself; its id is the subject. No refresh token is
// issued (RFC 6749 §4.4.3) and no ID token (there is no user).
func (s *Server) grantClientCredentials(r *http.Request, c *client, form url.Values) (*tokenResponse, *Error) {
	scopes, perr := c.clientScopes(form.Get("scope"))
	if perr != nil {
		return nil, perr
	}
	for _, userOnly := range []string{ScopeOfflineAccess, ScopeOpenID} {
		if i := slices.Index(scopes, userOnly); i >= 0 {
			if form.Get("scope") != "" {
				return nil, oauthErr(ErrCodeInvalidScope, "scope "+quoteScope(userOnly)+" needs a user")
			}
			scopes = slices.Delete(scopes, i, i+1)
		}
	}
	return s.issue(r.Context(), issueRequest{client: c, subject: c.ID, scopes: scopes, grant: GrantClientCredentials})
}
