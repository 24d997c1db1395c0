package grant

import (
	"context"
	"slices"

	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/tokens"
)

// clientCredentials is the client credentials grant (RFC 6749 §4.4): the
// client acts for itself; its id is the subject. No refresh token is issued
// (RFC 6749 §4.4.3) and no ID token (there is no user).
func (e *Endpoint) clientCredentials(ctx context.Context, req *Request) (*tokens.Response, *oauth.Error) {
	param := req.Form.Get("scope")
	scopes, perr := req.Client.RequestedScopes(param)
	if perr != nil {
		return nil, perr
	}
	for _, userOnly := range []string{oauth.ScopeOfflineAccess, oauth.ScopeOpenID} {
		if i := slices.Index(scopes, userOnly); i >= 0 {
			if param != "" {
				return nil, oauth.NewError(oauth.ErrInvalidScope, "scope "+oauth.QuoteScope(userOnly)+" needs a user")
			}
			scopes = slices.Delete(scopes, i, i+1)
		}
	}
	asked, perr := oauth.AskedDetails(req.Form)
	if perr != nil {
		return nil, perr
	}
	pairs, perr := oauth.NarrowDetails(req.Client.Entitlements, asked)
	if perr != nil {
		return nil, perr
	}
	return e.cfg.Tokens.Issue(ctx, tokens.Grant{Client: req.Client, Subject: req.Client.ID, Scopes: scopes,
		Type: oauth.GrantClientCredentials, Entitlements: pairs})
}
