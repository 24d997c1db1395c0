package logout

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// maxHintLen bounds an id_token_hint (DESIGN.md: a token 8 KiB).
const maxHintLen = 8 << 10

// hint is what an id_token_hint tells: who it was issued to, for whom, in
// which session.
type hint struct {
	client  *clients.Client
	subject string
	sid     string
}

// hintClaims are the claims of an ID token that the hint needs.
type hintClaims struct {
	Subject   string           `json:"sub"`
	SessionID string           `json:"sid"`
	Audience  jwt.ClaimStrings `json:"aud"`
	Issuer    string           `json:"iss"`
}

func (hintClaims) GetExpirationTime() (*jwt.NumericDate, error) { return nil, nil }
func (hintClaims) GetIssuedAt() (*jwt.NumericDate, error)       { return nil, nil }
func (hintClaims) GetNotBefore() (*jwt.NumericDate, error)      { return nil, nil }
func (c hintClaims) GetIssuer() (string, error)                 { return c.Issuer, nil }
func (c hintClaims) GetSubject() (string, error)                { return c.Subject, nil }
func (c hintClaims) GetAudience() (jwt.ClaimStrings, error)     { return c.Audience, nil }

// parseHint checks an id_token_hint: one of our ID tokens (typ JWT,
// RS256 only, signed by a key of ours, iss ours) issued to a registered
// client. Its expiry is not checked: RP-Initiated Logout 1.0 §2 lets an
// expired ID token be a hint (STYLE rule 11 names this exception). It
// must name exactly one audience, a registered client.
func parseHint(ctx context.Context, raw, issuer string, keys verify.KeySource, reg *clients.Registry) (*hint, error) {
	if len(raw) > maxHintLen {
		return nil, errors.New("id_token_hint too long")
	}
	var c hintClaims
	_, err := jwt.NewParser(
		jwt.WithValidMethods([]string{"RS256"}),
		jwt.WithoutClaimsValidation(), // exp deliberately not checked; iss and aud checked below
	).ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		if typ, _ := t.Header["typ"].(string); typ != "JWT" {
			return nil, fmt.Errorf("typ %q is not an ID token's", typ)
		}
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("no kid")
		}
		return keys.Key(ctx, kid)
	})
	if err != nil {
		return nil, fmt.Errorf("id_token_hint: %w", err)
	}
	if c.Issuer != issuer {
		return nil, errors.New("id_token_hint: another issuer")
	}
	if c.Subject == "" {
		return nil, errors.New("id_token_hint: no subject")
	}
	if len(c.Audience) != 1 {
		return nil, errors.New("id_token_hint: not exactly one audience")
	}
	client, ok := reg.Client(c.Audience[0])
	if !ok || !slices.Contains(client.Scopes, "openid") {
		return nil, errors.New("id_token_hint: audience is not a registered OpenID client")
	}
	return &hint{client: client, subject: c.Subject, sid: c.SessionID}, nil
}
