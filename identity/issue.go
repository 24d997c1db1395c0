package identity

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"go.uber.org/zap"
)

// issueRequest is what a grant established, for issue to mint tokens from.
type issueRequest struct {
	client   *client
	user     *store.User // nil for client credentials
	subject  string
	scopes   []string
	authTime time.Time // zero for client credentials
	grant    string
}

// mintedAccess is a signed access token and what the store records of it.
type mintedAccess struct {
	token    string
	jti      string
	expires  time.Time
	lifetime time.Duration
}

// mintAccess signs an access token for req at now.
func (s *Server) mintAccess(req issueRequest, now time.Time) (mintedAccess, *Error) {
	k, err := s.keys.signer(now)
	if err != nil {
		return mintedAccess{}, serverError(err)
	}
	jti, err := randomID(16)
	if err != nil {
		return mintedAccess{}, serverError(err)
	}
	lifetime := req.client.accessLifetime
	exp := now.Add(lifetime)
	claims := accessClaims{
		Issuer: s.cfg.Issuer, Subject: req.subject, Audience: s.cfg.Audience,
		Expiry: unix(exp), IssuedAt: unix(now), NotBefore: unix(now), ID: jti,
		ClientID: req.client.ID, Scope: strings.Join(req.scopes, " "),
		profileClaims: userClaims(req.user, req.scopes),
	}
	if !req.authTime.IsZero() {
		claims.AuthTime = unix(req.authTime)
	}
	tok, err := signJWT(k, TypeAccessToken, claims)
	if err != nil {
		return mintedAccess{}, serverError(err)
	}
	return mintedAccess{token: tok, jti: jti, expires: exp, lifetime: lifetime}, nil
}

// mintID signs an ID token for req when it grants openid to a user.
func (s *Server) mintID(req issueRequest, at mintedAccess, now time.Time) (string, *Error) {
	if req.user == nil || !slices.Contains(req.scopes, ScopeOpenID) {
		return "", nil
	}
	k, err := s.keys.signer(now)
	if err != nil {
		return "", serverError(err)
	}
	claims := idClaims{
		Issuer: s.cfg.Issuer, Subject: req.subject, Audience: req.client.ID,
		Expiry: unix(now.Add(s.cfg.IDTokenLifetime)), IssuedAt: unix(now),
		AuthTime: unix(req.authTime), AtHash: atHash(at.token),
		profileClaims: userClaims(req.user, req.scopes),
	}
	tok, err := signJWT(k, typeIDToken, claims)
	if err != nil {
		return "", serverError(err)
	}
	return tok, nil
}

// issue mints the tokens of a password or client-credentials grant: an
// access token, a new refresh-token family when offline_access is granted
// to a user with a client that may refresh, and an ID token for openid.
func (s *Server) issue(ctx context.Context, req issueRequest) (*tokenResponse, *Error) {
	now := s.cfg.Now()
	at, perr := s.mintAccess(req, now)
	if perr != nil {
		return nil, perr
	}
	resp := &tokenResponse{AccessToken: at.token, ExpiresIn: int64(at.lifetime / time.Second), TokenType: "Bearer", Scope: strings.Join(req.scopes, " ")}
	if req.user != nil && slices.Contains(req.scopes, ScopeOfflineAccess) && req.client.allowsGrant(GrantRefreshToken) {
		rt, perr := s.newFamily(ctx, req, at, now)
		if perr != nil {
			return nil, perr
		}
		resp.RefreshToken = rt
	}
	if resp.IDToken, perr = s.mintID(req, at, now); perr != nil {
		return nil, perr
	}
	s.audit.Info("token issued", zap.String("grant_type", req.grant), zap.String("client_id", req.client.ID),
		zap.String("sub", req.subject), zap.String("jti", at.jti), zap.Strings("scopes", req.scopes))
	return resp, nil
}

// newFamily stores a new refresh-token family and returns its first token.
func (s *Server) newFamily(ctx context.Context, req issueRequest, at mintedAccess, now time.Time) (string, *Error) {
	famID, err := randomID(16)
	if err != nil {
		return "", serverError(err)
	}
	token, err := randomID(32)
	if err != nil {
		return "", serverError(err)
	}
	pol := req.client.refresh
	fam := store.RefreshFamily{
		ID: famID, ClientID: req.client.ID, Subject: req.subject, Scopes: req.scopes,
		AuthTime: req.authTime, Created: now, ExpiresAt: now.Add(pol.AbsoluteLifetime),
	}
	first := store.RefreshToken{Hash: hashToken(token), FamilyID: famID, IssuedAt: now, ExpiresAt: slidingExpiry(now, pol, fam.ExpiresAt)}
	if err := s.store.CreateRefreshFamily(ctx, fam, first, store.IssuedAccessToken{JTI: at.jti, ExpiresAt: at.expires}); err != nil {
		return "", serverError(err)
	}
	return token, nil
}

func slidingExpiry(now time.Time, pol RefreshPolicy, absolute time.Time) time.Time {
	exp := now.Add(pol.SlidingLifetime)
	if exp.After(absolute) {
		return absolute
	}
	return exp
}

// hashToken is how refresh tokens are stored: SHA-256 of the token text.
func hashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// successorOf derives the token that replaces parent: HMAC(server secret,
// parent). Every instance sharing the store derives the same successor, so
// a concurrent refresh inside the grace window gets the same answer without
// any plaintext kept (DESIGN.md, "Token rules").
func (s *Server) successorOf(parent string) string {
	m := hmac.New(sha256.New, s.refreshSecret)
	m.Write([]byte("gatehouse refresh successor v1\x00"))
	m.Write([]byte(parent))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
