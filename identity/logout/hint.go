package logout

import (
	"context"
	"errors"
	"slices"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// hint is what an id_token_hint tells: who it was issued to, for whom, in
// which session.
type hint struct {
	client  *clients.Client
	subject string
	sid     string
}

// parseHint checks an id_token_hint (verify.ParseIDTokenHint) issued to
// exactly one audience, a registered OpenID client.
func parseHint(ctx context.Context, raw, issuer string, keys verify.KeySource, reg *clients.Registry) (*hint, error) {
	h, err := verify.ParseIDTokenHint(ctx, raw, issuer, keys)
	if err != nil {
		return nil, err
	}
	if len(h.Audience) != 1 {
		return nil, errors.New("id_token_hint: not exactly one audience")
	}
	client, ok := reg.Client(h.Audience[0])
	if !ok || !slices.Contains(client.Scopes, "openid") {
		return nil, errors.New("id_token_hint: audience is not a registered OpenID client")
	}
	return &hint{client: client, subject: h.Subject, sid: h.SessionID}, nil
}
