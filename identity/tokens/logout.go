package tokens

import (
	"fmt"
	"time"
)

// Logout tokens (OpenID Connect Back-Channel Logout 1.0 §2.4).
const (
	// TypeLogoutToken is the "typ" header of a logout token (§2.4: the
	// explicit type keeps it from being taken for an ID token).
	TypeLogoutToken = "logout+jwt"
	// BackchannelLogoutEvent is the member of the "events" claim that
	// makes a token a logout token.
	BackchannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"
	// LogoutTokenLifetime is how long a logout token is valid: long
	// enough for its retries, short enough to be useless if leaked.
	LogoutTokenLifetime = 2 * time.Minute
)

// logoutClaims are a logout token's claims: never a nonce (§2.4).
type logoutClaims struct {
	Issuer    string                    `json:"iss"`
	Subject   string                    `json:"sub,omitempty"`
	Audience  string                    `json:"aud"`
	IssuedAt  int64                     `json:"iat"`
	Expiry    int64                     `json:"exp"`
	ID        string                    `json:"jti"`
	SessionID string                    `json:"sid,omitempty"`
	Events    map[string]map[string]any `json:"events"`
}

// LogoutToken signs a logout token telling clientID that the session sid
// of subject has ended, with alg, the algorithm of the client's ID tokens
// (its IDTokenSignedResponseAlg; "" for the server's first): Back-Channel
// Logout 1.0 §2.4 signs logout tokens as ID tokens are, and a relying
// party that pins its ID tokens' alg refuses any other. It returns the
// token and its jti.
func (s *Service) LogoutToken(clientID, alg, subject, sid string) (token, jti string, err error) {
	if clientID == "" || (subject == "" && sid == "") {
		return "", "", fmt.Errorf("logout token: needs a client and a subject or a session")
	}
	if jti, err = randomID(16); err != nil {
		return "", "", err
	}
	now := s.cfg.Now()
	claims := logoutClaims{
		Issuer: s.cfg.Issuer, Subject: subject, Audience: clientID, IssuedAt: now.Unix(),
		Expiry: now.Add(LogoutTokenLifetime).Unix(), ID: jti, SessionID: sid,
		Events: map[string]map[string]any{BackchannelLogoutEvent: {}},
	}
	if token, err = s.cfg.Keys.Sign(alg, TypeLogoutToken, claims, now); err != nil {
		return "", "", fmt.Errorf("signing logout token: %w", err)
	}
	return token, jti, nil
}

// Issuer is the "iss" of the service's tokens.
func (s *Service) Issuer() string { return s.cfg.Issuer }
