package grant

import (
	"context"
	"errors"
	"net/http"

	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/users"
)

// password is the resource owner password credentials grant (RFC 6749
// §4.3, docs/api-surface.md §4.2).
func (e *Endpoint) password(ctx context.Context, req *Request) (*tokens.Response, *oauth.Error) {
	username, password := req.Form.Get("username"), req.Form.Get("password")
	if username == "" || password == "" {
		return nil, oauth.InvalidRequest("username and password are required")
	}
	scopes, perr := req.Client.RequestedScopes(req.Form.Get("scope"))
	if perr != nil {
		return nil, perr
	}
	// A scope that needs a second factor, asked for by name, is refused
	// before the password is read: the grant cannot prove a factor. One
	// the client holds by default is dropped from the grant (Issue).
	if req.Form.Get("scope") != "" {
		if need := e.cfg.Tokens.NeedsSecondFactor(scopes); len(need) > 0 {
			return nil, oauth.NewError(oauth.ErrInvalidScope, "scope "+oauth.QuoteScope(need[0])+
				" needs a second factor, which the password grant cannot prove: sign in through the authorization endpoint")
		}
	}
	asked, perr := oauth.AskedDetails(req.Form)
	if perr != nil {
		return nil, perr
	}
	// The authentication's time is taken before the user is read: a
	// password change that lands while the check runs (it may wait on a
	// throttle or a hash slot) ends this authentication too (sessionsEnded).
	at := e.now()
	user, err := e.cfg.Passwords.Check(ctx, username, password, req.Source)
	switch {
	case errors.Is(err, users.ErrBadCredentials):
		return nil, &oauth.Error{Code: oauth.ErrInvalidGrant, Description: "invalid username or password", Cause: err}
	case errors.Is(err, users.ErrBusy):
		return nil, &oauth.Error{Code: oauth.ErrTemporarilyUnavail, Description: "the server is busy, try again", Status: http.StatusServiceUnavailable, Cause: err}
	case err != nil:
		return nil, oauth.ServerError(err)
	}
	granted := oauth.Intersect(scopes, user.Scopes)
	if len(granted) == 0 {
		return nil, oauth.NewError(oauth.ErrInvalidScope, "none of the requested scopes is allowed for this user")
	}
	// Narrowed after the password is checked: a refusal for a pair not
	// held tells nothing to one who does not know the password.
	pairs, perr := oauth.NarrowDetails(user.Entitlements, asked)
	if perr != nil {
		return nil, perr
	}
	resp, perr := e.cfg.Tokens.Issue(ctx, tokens.Grant{
		Client: req.Client, User: &user, Subject: user.Subject, Scopes: granted,
		AuthTime: at, AMR: []string{oauth.AMRPassword}, Type: oauth.GrantPassword, Entitlements: pairs,
	})
	if perr != nil && errors.Is(perr.Cause, tokens.ErrSessionsEnded) {
		// The password changed while it was checked: the answer is a wrong
		// password's, not one that says the guess was right until now.
		return nil, &oauth.Error{Code: oauth.ErrInvalidGrant, Description: "invalid username or password", Cause: perr.Cause}
	}
	return resp, perr
}
