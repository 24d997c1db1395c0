package grant

import (
	"context"

	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/tokens"
)

// refresh is the refresh grant (RFC 6749 §6, docs/api-surface.md §4.3); the
// family rules live in tokens.Service.Refresh.
func (e *Endpoint) refresh(ctx context.Context, req *Request) (*tokens.Response, *oauth.Error) {
	token := req.Form.Get("refresh_token")
	if token == "" {
		return nil, oauth.InvalidRequest("missing refresh_token")
	}
	asked, perr := oauth.AskedDetails(req.Form)
	if perr != nil {
		return nil, perr
	}
	return e.cfg.Tokens.Refresh(ctx, req.Client, token, tokens.Ask{Scope: req.Form.Get("scope"), Details: asked})
}
