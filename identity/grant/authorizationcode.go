package grant

import (
	"context"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/users"
)

// authorizationCode is the authorization code grant (RFC 6749 §4.1.3, RFC
// 7636 §4.5): the code rules (one use, lifetime, client, redirect URI,
// PKCE, replay) live in tokens.Service.ExchangeCode.
func (e *Endpoint) authorizationCode(ctx context.Context, req *Request) (*tokens.Response, *oauth.Error) {
	code := req.Form.Get("code")
	if code == "" {
		return nil, oauth.InvalidRequest("missing code")
	}
	asked, perr := oauth.AskedDetails(req.Form)
	if perr != nil {
		return nil, perr
	}
	return e.cfg.Tokens.ExchangeCode(ctx, req.Client, code, req.Form.Get("redirect_uri"), req.Form.Get("code_verifier"), asked)
}

// CodeGrant runs the authorization code grant for an authenticated client,
// as a token request would (the client must be allowed the grant): the
// entry point of the other front doors that take a code (the message
// gateway's AuthCode).
func (e *Endpoint) CodeGrant(ctx context.Context, c *clients.Client, code, redirectURI, verifier string) (*tokens.Response, *oauth.Error) {
	if e.refusing() {
		return nil, oauth.TemporarilyUnavailable(users.ErrAuditRefusing)
	}
	if !c.AllowsGrant(oauth.GrantAuthorizationCode) {
		return nil, oauth.NewError(oauth.ErrUnauthorizedClient, "the client is not allowed this grant type")
	}
	if code == "" {
		return nil, oauth.InvalidRequest("missing code")
	}
	resp, perr := e.cfg.Tokens.ExchangeCode(ctx, c, code, redirectURI, verifier, nil)
	if perr == nil && e.cfg.Issued != nil {
		e.cfg.Issued(oauth.GrantAuthorizationCode, c.ID)
	}
	return resp, perr
}
