package identity

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"go.uber.org/zap"
)

// maxRefreshTokenLen bounds the refresh_token parameter.
const maxRefreshTokenLen = 512

func errBadRefresh(cause error) *Error {
	return &Error{Code: ErrCodeInvalidGrant, Description: "the refresh token is invalid, expired or revoked", Cause: cause}
}

// grantRefresh is the refresh grant (RFC 6749 §6, interface.md §4.3).
// Every refresh rotates: a new access token and a new refresh token. A
// replayed token revokes its family (RFC 9700 §4.14), except the same
// parent sent again by the same client inside the grace window before its
// successor was used, which gets the same successor.
func (s *Server) grantRefresh(r *http.Request, c *client, form url.Values) (*tokenResponse, *Error) {
	token := form.Get("refresh_token")
	if token == "" {
		return nil, invalidRequest("missing refresh_token")
	}
	if len(token) > maxRefreshTokenLen {
		return nil, errBadRefresh(errors.New("refresh token too long"))
	}
	ctx := r.Context()
	now := s.cfg.Now()
	rec, fam, err := s.store.RefreshToken(ctx, hashToken(token))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errBadRefresh(errors.New("unknown refresh token"))
	case err != nil:
		return nil, serverError(err)
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
	req, perr := s.refreshRequest(ctx, c, fam, form.Get("scope"))
	if perr != nil {
		return nil, perr
	}
	at, perr := s.mintAccess(req, now)
	if perr != nil {
		return nil, perr
	}
	successor := s.successorOf(token)
	if rec.RotatedAt.IsZero() {
		child := store.RefreshToken{
			Hash: hashToken(successor), FamilyID: fam.ID, Parent: rec.Hash, IssuedAt: now,
			ExpiresAt: slidingExpiry(now, c.refresh, fam.ExpiresAt),
		}
		err = s.store.RotateRefreshToken(ctx, rec.Hash, child, store.IssuedAccessToken{JTI: at.jti, ExpiresAt: at.expires}, now)
		switch {
		case err == nil:
			return s.refreshed(req, at, successor, now, false)
		case errors.Is(err, store.ErrFamilyRevoked):
			return nil, errBadRefresh(err)
		case !errors.Is(err, store.ErrAlreadyRotated):
			return nil, serverError(err)
		}
		// Lost the compare-and-swap to a concurrent refresh: read what won.
		if rec, _, err = s.store.RefreshToken(ctx, rec.Hash); err != nil {
			return nil, serverError(err)
		}
	}
	return s.replayed(ctx, req, rec, fam, at, successor, now)
}

// replayed answers a refresh token that was rotated before: the grace
// window's same successor, or the family's revocation.
func (s *Server) replayed(ctx context.Context, req issueRequest, rec store.RefreshToken, fam store.RefreshFamily, at mintedAccess, successor string, now time.Time) (*tokenResponse, *Error) {
	grace := req.client.refresh.Grace
	if grace > 0 && now.Sub(rec.RotatedAt) <= grace && string(rec.Successor) == string(hashToken(successor)) {
		next, _, err := s.store.RefreshToken(ctx, rec.Successor)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, serverError(err)
		}
		if err == nil && next.RotatedAt.IsZero() {
			err := s.store.RecordAccessToken(ctx, fam.ID, store.IssuedAccessToken{JTI: at.jti, ExpiresAt: at.expires})
			if errors.Is(err, store.ErrFamilyRevoked) {
				return nil, errBadRefresh(err)
			} else if err != nil {
				return nil, serverError(err)
			}
			return s.refreshed(req, at, successor, now, true)
		}
	}
	if err := s.store.RevokeRefreshFamily(ctx, fam.ID, now); err != nil {
		return nil, serverError(err)
	}
	s.audit.Warn("refresh token replay detected", zap.String("client_id", fam.ClientID),
		zap.String("sub", fam.Subject), zap.String("family_id", fam.ID))
	return nil, errBadRefresh(errors.New("refresh token replayed: family revoked"))
}

// refreshRequest rebuilds the grant of a family: the user must still exist
// and be enabled; the scopes are the family's, narrowed by what the client
// and user may hold now and by a scope parameter (RFC 6749 §6: no scope
// beyond the original grant).
func (s *Server) refreshRequest(ctx context.Context, c *client, fam store.RefreshFamily, scopeParam string) (issueRequest, *Error) {
	user, err := s.store.UserBySubject(ctx, fam.Subject)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return issueRequest{}, errBadRefresh(errors.New("user no longer exists"))
	case err != nil:
		return issueRequest{}, serverError(err)
	case user.Disabled:
		return issueRequest{}, errBadRefresh(errors.New("user disabled"))
	}
	scopes := intersect(intersect(fam.Scopes, c.Scopes), user.Scopes)
	if scopeParam != "" {
		want, perr := parseScope(scopeParam)
		if perr != nil {
			return issueRequest{}, perr
		}
		for _, sc := range want {
			if !slices.Contains(scopes, sc) {
				return issueRequest{}, oauthErr(ErrCodeInvalidScope, "scope "+quoteScope(sc)+" exceeds the original grant")
			}
		}
		scopes = want
	}
	return issueRequest{client: c, user: &user, subject: fam.Subject, scopes: scopes, authTime: fam.AuthTime, grant: GrantRefreshToken}, nil
}

// refreshed renders a successful refresh.
func (s *Server) refreshed(req issueRequest, at mintedAccess, successor string, now time.Time, grace bool) (*tokenResponse, *Error) {
	resp := &tokenResponse{
		AccessToken: at.token, ExpiresIn: int64(at.lifetime / time.Second), TokenType: "Bearer",
		RefreshToken: successor, Scope: strings.Join(req.scopes, " "),
	}
	var perr *Error
	if resp.IDToken, perr = s.mintID(req, at, now); perr != nil {
		return nil, perr
	}
	s.audit.Info("token issued", zap.String("grant_type", GrantRefreshToken), zap.String("client_id", req.client.ID),
		zap.String("sub", req.subject), zap.String("jti", at.jti), zap.Strings("scopes", req.scopes), zap.Bool("grace", grace))
	return resp, nil
}
