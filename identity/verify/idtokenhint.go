package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
)

// idTokenAlgorithms are the algorithms of the server's ID tokens.
var idTokenAlgorithms = []string{"RS256", "ES256", "EdDSA"}

// MaxIDTokenHint bounds an id_token_hint (docs/design.md: a token 8 KiB).
const MaxIDTokenHint = 8 << 10

// IDTokenHint is what an id_token_hint says: for whom, in which login
// session, to whom it was issued.
type IDTokenHint struct {
	Subject   string
	SessionID string
	Audience  []string
}

// hintClaims are the claims of an ID token that a hint needs.
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

// ParseIDTokenHint checks an id_token_hint (OpenID Connect Core §3.1.2.1,
// RP-Initiated Logout 1.0 §2): one of issuer's ID tokens (typ JWT, RS256,
// ES256 or EdDSA, each of which jwt's method verifies with its own key
// type only, signed by a key of keys, iss issuer) with a subject, at most MaxIDTokenHint bytes.
// Its expiry is not checked: a hint may be an expired ID token (STYLE
// rule 11 names this exception); the caller checks its audience.
func ParseIDTokenHint(ctx context.Context, raw, issuer string, keys KeySource) (IDTokenHint, error) {
	if len(raw) > MaxIDTokenHint {
		return IDTokenHint{}, errors.New("id_token_hint too long")
	}
	var c hintClaims
	_, err := jwt.NewParser(
		jwt.WithValidMethods(idTokenAlgorithms),
		jwt.WithoutClaimsValidation(), // exp deliberately not checked; iss checked below, aud by the caller
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
	switch {
	case err != nil:
		return IDTokenHint{}, fmt.Errorf("id_token_hint: %w", err)
	case c.Issuer != issuer:
		return IDTokenHint{}, errors.New("id_token_hint: another issuer")
	case c.Subject == "":
		return IDTokenHint{}, errors.New("id_token_hint: no subject")
	}
	return IDTokenHint{Subject: c.Subject, SessionID: c.SessionID, Audience: c.Audience}, nil
}
