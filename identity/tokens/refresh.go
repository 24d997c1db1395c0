package tokens

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
)

// MaxRefreshTokenLen bounds a refresh token a request may send.
const MaxRefreshTokenLen = 512

// RefreshSecretName names the server secret successors are derived with.
const RefreshSecretName = "refresh-successor-v1"

func errBadRefresh(cause error) *oauth.Error {
	return &oauth.Error{Code: oauth.ErrInvalidGrant, Description: "the refresh token is invalid, expired or revoked", Cause: cause}
}

// HashToken is how refresh tokens are stored: SHA-256 of the token text.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// newFamily stores a new refresh-token family and returns its first token.
func (s *Service) newFamily(ctx context.Context, g Grant, at access, now time.Time) (string, *oauth.Error) {
	famID, err := randomID(16)
	if err != nil {
		return "", oauth.ServerError(err)
	}
	token, err := randomID(32)
	if err != nil {
		return "", oauth.ServerError(err)
	}
	pol := g.Client.Refresh
	fam := store.RefreshFamily{
		ID: famID, ClientID: g.Client.ID, Subject: g.Subject, Scopes: g.Scopes,
		AuthTime: g.AuthTime, Created: now, ExpiresAt: now.Add(pol.AbsoluteLifetime),
	}
	first := store.RefreshToken{Hash: HashToken(token), FamilyID: famID, IssuedAt: now, ExpiresAt: slidingExpiry(now, pol, fam.ExpiresAt)}
	if err := s.cfg.Store.CreateRefreshFamily(ctx, fam, first, at.issued()); err != nil {
		return "", oauth.ServerError(err)
	}
	return token, nil
}

func slidingExpiry(now time.Time, pol clients.RefreshPolicy, absolute time.Time) time.Time {
	exp := now.Add(pol.SlidingLifetime)
	if exp.After(absolute) {
		return absolute
	}
	return exp
}

// successorOf derives the token that replaces parent: HMAC(server secret,
// parent). Every instance sharing the store derives the same successor, so
// a concurrent refresh inside the grace window gets the same answer without
// any plaintext kept (DESIGN.md, "Token rules").
func (s *Service) successorOf(parent string) string {
	m := hmac.New(sha256.New, s.cfg.RefreshSecret)
	m.Write([]byte("gatehouse refresh successor v1\x00"))
	m.Write([]byte(parent))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Refresh is the refresh grant for client c (RFC 6749 §6, interface.md
// §4.3). Every refresh rotates: a new access token and a new refresh token.
// A replayed token revokes its family (RFC 9700 §4.14), except the same
// parent sent again by the same client inside the grace window before its
// successor was used, which gets the same successor. scopeParam may narrow
// the scopes.
func (s *Service) Refresh(ctx context.Context, c *clients.Client, token, scopeParam string) (*Response, *oauth.Error) {
	if len(token) > MaxRefreshTokenLen {
		return nil, errBadRefresh(errors.New("refresh token too long"))
	}
	st := s.cfg.Store
	now := s.cfg.Now()
	rec, fam, err := st.RefreshToken(ctx, HashToken(token))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errBadRefresh(errors.New("unknown refresh token"))
	case err != nil:
		return nil, oauth.ServerError(err)
	}
	if fam.ClientID != c.ID {
		// Not this client's token: refuse, but do not let another client
		// revoke the family.
		return nil, errBadRefresh(errors.New("refresh token issued to another client"))
	}
	if !fam.RevokedAt.IsZero() {
		return nil, errBadRefresh(errors.New("refresh token family revoked"))
	}
	if !now.Before(rec.ExpiresAt) || !now.Before(fam.ExpiresAt) {
		return nil, errBadRefresh(errors.New("refresh token expired"))
	}
	g, perr := s.refreshGrant(ctx, c, fam, scopeParam)
	if perr != nil {
		return nil, perr
	}
	at, perr := s.mintAccess(g, now)
	if perr != nil {
		return nil, perr
	}
	successor := s.successorOf(token)
	if rec.RotatedAt.IsZero() {
		child := store.RefreshToken{
			Hash: HashToken(successor), FamilyID: fam.ID, Parent: rec.Hash, IssuedAt: now,
			ExpiresAt: slidingExpiry(now, c.Refresh, fam.ExpiresAt),
		}
		err = st.RotateRefreshToken(ctx, rec.Hash, child, at.issued(), now)
		switch {
		case err == nil:
			return s.refreshed(g, at, successor, now, false)
		case errors.Is(err, store.ErrFamilyRevoked):
			return nil, errBadRefresh(err)
		case !errors.Is(err, store.ErrAlreadyRotated):
			return nil, oauth.ServerError(err)
		}
		// Lost the compare-and-swap to a concurrent refresh: read what won.
		if rec, _, err = st.RefreshToken(ctx, rec.Hash); err != nil {
			return nil, oauth.ServerError(err)
		}
	}
	return s.replayed(ctx, g, rec, fam, at, successor, now)
}

// replayed answers a refresh token that was rotated before: the grace
// window's same successor, or the family's revocation.
func (s *Service) replayed(ctx context.Context, g Grant, rec store.RefreshToken, fam store.RefreshFamily, at access, successor string, now time.Time) (*Response, *oauth.Error) {
	st := s.cfg.Store
	grace := g.Client.Refresh.Grace
	if grace > 0 && now.Sub(rec.RotatedAt) <= grace && string(rec.Successor) == string(HashToken(successor)) {
		next, _, err := st.RefreshToken(ctx, rec.Successor)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, oauth.ServerError(err)
		}
		if err == nil && next.RotatedAt.IsZero() {
			err := st.RecordAccessToken(ctx, fam.ID, at.issued())
			if errors.Is(err, store.ErrFamilyRevoked) {
				return nil, errBadRefresh(err)
			} else if err != nil {
				return nil, oauth.ServerError(err)
			}
			return s.refreshed(g, at, successor, now, true)
		}
	}
	if err := st.RevokeRefreshFamily(ctx, fam.ID, now); err != nil {
		return nil, oauth.ServerError(err)
	}
	s.cfg.Audit.Warn("refresh token replay detected", zap.String("client_id", fam.ClientID),
		zap.String("sub", fam.Subject), zap.String("family_id", fam.ID))
	if s.cfg.FamilyRevoked != nil {
		if err := s.cfg.FamilyRevoked(ctx); err != nil {
			return nil, oauth.ServerError(err)
		}
	}
	return nil, errBadRefresh(errors.New("refresh token replayed: family revoked"))
}

// refreshGrant rebuilds the grant of a family: the user must still exist
// and be enabled; the scopes are the family's, narrowed by what the client
// and user may hold now and by a scope parameter (RFC 6749 §6: no scope
// beyond the original grant).
func (s *Service) refreshGrant(ctx context.Context, c *clients.Client, fam store.RefreshFamily, scopeParam string) (Grant, *oauth.Error) {
	user, err := s.cfg.Store.UserBySubject(ctx, fam.Subject)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Grant{}, errBadRefresh(errors.New("user no longer exists"))
	case err != nil:
		return Grant{}, oauth.ServerError(err)
	case user.Disabled:
		return Grant{}, errBadRefresh(errors.New("user disabled"))
	}
	scopes := oauth.Intersect(oauth.Intersect(fam.Scopes, c.Scopes), user.Scopes)
	if scopeParam != "" {
		want, perr := oauth.ParseScope(scopeParam)
		if perr != nil {
			return Grant{}, perr
		}
		for _, sc := range want {
			if !slices.Contains(scopes, sc) {
				return Grant{}, oauth.NewError(oauth.ErrInvalidScope, "scope "+oauth.QuoteScope(sc)+" exceeds the original grant")
			}
		}
		scopes = want
	}
	return Grant{Client: c, User: &user, Subject: fam.Subject, Scopes: scopes, AuthTime: fam.AuthTime, Type: oauth.GrantRefreshToken}, nil
}

// refreshed renders a successful refresh.
func (s *Service) refreshed(g Grant, at access, successor string, now time.Time, grace bool) (*Response, *oauth.Error) {
	resp := &Response{
		AccessToken: at.token, ExpiresIn: int64(at.lifetime / time.Second), TokenType: "Bearer",
		RefreshToken: successor, Scope: strings.Join(g.Scopes, " "),
	}
	var perr *oauth.Error
	if resp.IDToken, perr = s.mintID(g, at, now); perr != nil {
		return nil, perr
	}
	s.cfg.Audit.Info("token issued", zap.String("grant_type", oauth.GrantRefreshToken), zap.String("client_id", g.Client.ID),
		zap.String("sub", g.Subject), zap.String("jti", at.jti), zap.Strings("scopes", g.Scopes), zap.Bool("grace", grace))
	return resp, nil
}
