package grant

import (
	"context"

	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/tokens"
)

// authorizationCode is the authorization code grant (RFC 6749 §4.1.3, RFC
// 7636 §4.5): the code rules (one use, lifetime, client, redirect URI,
// PKCE, replay) live in tokens.Service.ExchangeCode.
func (e *Endpoint) authorizationCode(ctx context.Context, req *Request) (*tokens.Response, *oauth.Error) {
	code := req.Form.Get("code")
	if code == "" {
		return nil, oauth.InvalidRequest("missing code")
	}
	return e.cfg.Tokens.ExchangeCode(ctx, req.Client, code, req.Form.Get("redirect_uri"), req.Form.Get("code_verifier"))
}
