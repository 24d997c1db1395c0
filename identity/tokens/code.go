package tokens

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
)

func errBadCode(cause string) *oauth.Error {
	return &oauth.Error{Code: oauth.ErrInvalidGrant, Description: "the authorization code is invalid, expired or used", Cause: errors.New(cause)}
}

// ExchangeCode is the authorization code grant (RFC 6749 §4.1.3) for the
// authenticated client c. The code must be c's, unexpired and unused;
// redirectURI must be the authorization request's, verifier must match its
// PKCE challenge (RFC 7636 §4.6), and a verifier without a challenge is
// refused (RFC 9700 §2.1.1: no PKCE downgrade). A refused request changes
// nothing, except that a code used before is a replay: it revokes the
// tokens its first use issued (RFC 6749 §4.1.2) when its own client
// presents it.
func (s *Service) ExchangeCode(ctx context.Context, c *clients.Client, code, redirectURI, verifier string, asked *entitle.Set) (*Response, *oauth.Error) {
	if s.cfg.Codes == nil {
		return nil, oauth.NewError(oauth.ErrUnsupportedGrantType, "unsupported grant_type")
	}
	if len(code) > MaxCodeLen {
		return nil, errBadCode("code too long")
	}
	hash := HashToken(code)
	rec, err := s.cfg.Codes.Code(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errBadCode("unknown code")
	case err != nil:
		return nil, oauth.ServerError(err)
	}
	now := s.cfg.Now()
	switch {
	case rec.ClientID != c.ID:
		// Not this client's code: refuse, but do not let another client
		// burn it or revoke what it issued.
		return nil, errBadCode("code issued to another client")
	case !rec.UsedAt.IsZero():
		return nil, s.codeReplayed(ctx, hash, now)
	case !now.Before(rec.ExpiresAt):
		return nil, errBadCode("code expired")
	case redirectURI != rec.RedirectURI:
		return nil, errBadCode("redirect_uri differs from the authorization request's")
	}
	if perr := checkVerifier(rec, verifier); perr != nil {
		return nil, perr
	}
	g, perr := s.codeGrant(ctx, c, rec, asked)
	if perr != nil {
		return nil, perr
	}
	// The ids of the tokens are chosen before the code is used, so that
	// the use records them in the same step.
	var fam *newFamily
	if slices.Contains(g.Scopes, oauth.ScopeOfflineAccess) && c.AllowsGrant(oauth.GrantRefreshToken) {
		if fam, perr = s.prepareFamily(g, now); perr != nil {
			return nil, perr
		}
		g.FamilyID = fam.row.ID
	}
	jti, perr := newJTI()
	if perr != nil {
		return nil, perr
	}
	issue := store.CodeIssue{FamilyID: g.FamilyID, AccessTokenID: jti, AccessTokenExpiresAt: now.Add(c.AccessLifetime)}
	switch _, err := s.cfg.Codes.ConsumeCode(ctx, hash, now, issue); {
	case errors.Is(err, store.ErrCodeUsed):
		// Lost to a concurrent exchange: a replay all the same.
		return nil, s.codeReplayed(ctx, hash, now)
	case errors.Is(err, store.ErrNotFound):
		return nil, errBadCode("code purged")
	case err != nil:
		return nil, oauth.ServerError(err)
	}
	resp, perr := s.issueFromCode(ctx, g, fam, jti, now)
	if perr != nil {
		return nil, perr
	}
	// A replay that came while the tokens were being issued found the
	// family not stored yet: check once more, now that it is.
	if after, err := s.cfg.Codes.Code(ctx, hash); err == nil && !after.ReplayedAt.IsZero() {
		return nil, s.revokeIssued(ctx, after, now)
	}
	// A logout that ended the code's session while the tokens were being
	// issued may have looked for the session's families before this one
	// was stored: check once more, now that it is (the logout looks again
	// after it ends the session, so one of the two sees the other).
	if fam != nil {
		switch ended, perr := s.sessionEnded(ctx, rec); {
		case perr != nil:
			return nil, perr
		case ended:
			rec.FamilyID, rec.AccessTokenID = issue.FamilyID, issue.AccessTokenID
			if err := s.revokeCodeTokens(ctx, rec, now); err != nil {
				return nil, oauth.ServerError(err)
			}
			s.cfg.Audit.Info("tokens of a code revoked: its login session ended during the exchange", zap.String("client_id", rec.ClientID),
				zap.String("sub", rec.Subject), zap.String("family_id", rec.FamilyID), zap.String("jti", rec.AccessTokenID))
			return nil, errBadCode("the login session ended (a logout) during the exchange")
		}
	}
	return resp, nil
}

// checkVerifier is the PKCE check of a token request against the code's
// challenge.
func checkVerifier(rec store.AuthCode, verifier string) *oauth.Error {
	switch {
	case rec.CodeChallenge == "" && verifier != "":
		return errBadCode("code_verifier sent, but the authorization request had no code_challenge")
	case rec.CodeChallenge == "":
		return nil
	case verifier == "":
		return errBadCode("code_verifier missing")
	case !verifyPKCE(rec.CodeChallenge, rec.CodeChallengeMethod, verifier):
		return errBadCode("code_verifier does not match the code_challenge")
	}
	return nil
}

// codeGrant rebuilds the grant of a code: the user must still exist and be
// enabled; the scopes are the code's, narrowed by what the client and the
// user may hold now.
func (s *Service) codeGrant(ctx context.Context, c *clients.Client, rec store.AuthCode, asked *entitle.Set) (Grant, *oauth.Error) {
	user, err := s.cfg.Store.UserBySubject(ctx, rec.Subject)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Grant{}, errBadCode("user no longer exists")
	case err != nil:
		return Grant{}, oauth.ServerError(err)
	case user.Disabled:
		return Grant{}, errBadCode("user disabled")
	}
	switch ended, perr := s.sessionEnded(ctx, rec); {
	case perr != nil:
		return Grant{}, perr
	case ended:
		return Grant{}, errBadCode("the login session ended (a logout) after the code was issued")
	}
	scopes := s.FitFactors(true, oauth.Intersect(oauth.Intersect(rec.Scopes, c.Scopes), user.Scopes), rec.AMR)
	// The code's pairs that the user still holds, of which the token
	// request may ask for fewer.
	pairs, perr := oauth.NarrowDetails(rec.Entitlements.Intersect(user.Entitlements), asked)
	if perr != nil {
		return Grant{}, perr
	}
	return Grant{
		Client: c, User: &user, Subject: rec.Subject, Scopes: scopes, AuthTime: rec.AuthTime, AMR: rec.AMR,
		Type: oauth.GrantAuthorizationCode, Nonce: rec.Nonce, SessionID: rec.SessionID, Entitlements: pairs,
	}, nil
}

// sessionEnded reports whether the login session rec was issued in has
// ended (a logout deleted it); false for a code of no session, or without
// Config.Sessions.
func (s *Service) sessionEnded(ctx context.Context, rec store.AuthCode) (bool, *oauth.Error) {
	if rec.SessionID == "" || s.cfg.Sessions == nil {
		return false, nil
	}
	ok, err := s.cfg.Sessions.SessionExists(ctx, rec.SessionID)
	if err != nil {
		return false, oauth.ServerError(err)
	}
	return !ok, nil
}

// issueFromCode mints the tokens of a used code: the refresh family fam
// (if any) is stored, the access token has the id jti.
func (s *Service) issueFromCode(ctx context.Context, g Grant, fam *newFamily, jti string, now time.Time) (*Response, *oauth.Error) {
	at, perr := s.mintAccessID(g, jti, now)
	if perr != nil {
		return nil, perr
	}
	resp := newResponse(g, at)
	if fam != nil {
		if err := s.cfg.Store.CreateRefreshFamily(ctx, fam.row, s.familyBound(g)); err != nil {
			return nil, oauth.ServerError(err)
		}
		resp.RefreshToken = fam.token
	}
	if resp.IDToken, perr = s.mintID(g, &at, "", now); perr != nil {
		return nil, perr
	}
	if perr := s.sessionsEnded(ctx, g); perr != nil {
		return nil, perr
	}
	s.cfg.Audit.Info("token issued", zap.String("grant_type", g.Type), zap.String("client_id", g.Client.ID),
		zap.String("sub", g.Subject), zap.String("jti", at.jti), zap.Strings("scopes", g.Scopes),
		zap.Stringer("entitlements", g.Entitlements))
	s.recordIssued(g, g.Type, at.jti)
	return resp, nil
}

// codeReplayed records the replay of a used code and revokes what its
// first use issued.
func (s *Service) codeReplayed(ctx context.Context, hash []byte, now time.Time) *oauth.Error {
	rec, err := s.cfg.Codes.ConsumeCode(ctx, hash, now, store.CodeIssue{})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errBadCode("code purged")
	case err != nil && !errors.Is(err, store.ErrCodeUsed):
		return oauth.ServerError(err)
	}
	return s.revokeIssued(ctx, rec, now)
}

// revokeIssued revokes the tokens a code's first use issued: its refresh
// family (with the access tokens issued from it) and its access token by
// jti. A family not stored yet is revoked by its issuer's own check
// (ExchangeCode reads the code again once it has stored it).
func (s *Service) revokeIssued(ctx context.Context, rec store.AuthCode, now time.Time) *oauth.Error {
	if err := s.revokeCodeTokens(ctx, rec, now); err != nil {
		return oauth.ServerError(err)
	}
	s.cfg.Audit.Warn("authorization code replay detected", zap.String("client_id", rec.ClientID),
		zap.String("sub", rec.Subject), zap.String("family_id", rec.FamilyID), zap.String("jti", rec.AccessTokenID))
	return errBadCode("code used before: the tokens it issued are revoked")
}

// revokeCodeTokens revokes what the use of rec issued, its refresh family
// and its access token, and has this instance's verifiers refuse them at
// once (FamilyRevoked).
func (s *Service) revokeCodeTokens(ctx context.Context, rec store.AuthCode, now time.Time) error {
	if rec.FamilyID != "" {
		err := s.cfg.Store.RevokeRefreshFamily(ctx, rec.FamilyID, now, s.revocationUntil(now))
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	if rec.AccessTokenID != "" {
		if err := s.cfg.Store.RevokeAccessToken(ctx, rec.AccessTokenID, s.revocationUntil(now), now); err != nil {
			return err
		}
	}
	if s.cfg.FamilyRevoked != nil {
		return s.cfg.FamilyRevoked(ctx, now)
	}
	return nil
}
