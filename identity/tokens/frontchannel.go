package tokens

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
)

// Bounds and defaults of authorization codes.
const (
	// DefaultCodeLifetime is how long a code may be exchanged.
	DefaultCodeLifetime = 60 * time.Second
	// CodeRetention is how long a code's record is kept after its
	// lifetime, so that a second use is still recognised as a replay and
	// revokes what the first issued.
	CodeRetention = 24 * time.Hour
	// MaxCodeLen bounds a code a token request may send.
	MaxCodeLen = 128
)

// Authorization is what the authorization endpoint established: the grant
// of a user to a client (with Nonce and SessionID for the ID token), the
// request's binding for a code, and what the response type asks the front
// channel to carry.
type Authorization struct {
	Grant
	// RedirectURI is the request's redirect_uri as sent ("" when it was
	// left out); the code exchange must send the same.
	RedirectURI string
	// CodeChallenge and CodeChallengeMethod are the request's PKCE
	// challenge; empty when it had none.
	CodeChallenge       string
	CodeChallengeMethod string
	// Code, Token and IDToken are the response type's parts.
	Code, Token, IDToken bool
}

// FrontChannel is what the authorization response carries (RFC 6749
// §4.1.2, §4.2.2, OpenID Connect Core §3.3.2.5). Never a refresh token.
type FrontChannel struct {
	Code        string
	AccessToken string
	TokenType   string
	ExpiresIn   int64
	Scope       string
	IDToken     string
}

// CodesEnabled reports whether the service issues and exchanges codes (it
// has a store for them).
func (s *Service) CodesEnabled() bool { return s.cfg.Codes != nil }

// Authorize issues what an authorization response carries: a code (stored
// by its hash, bound to the client, the redirect URI and the PKCE
// challenge), an access token (implicit: no refresh token, RFC 6749
// §4.2.2), and an ID token with nonce, sid, auth_time, and at_hash and
// c_hash for what it comes with.
func (s *Service) Authorize(ctx context.Context, a Authorization) (*FrontChannel, *oauth.Error) {
	now := s.cfg.Now()
	out := &FrontChannel{}
	g := a.Grant
	g.Scopes = s.FitFactors(true, g.Scopes, g.AMR)
	if a.Code {
		if s.cfg.Codes == nil {
			return nil, oauth.ServerError(errors.New("no code store"))
		}
		code, err := randomID(32)
		if err != nil {
			return nil, oauth.ServerError(err)
		}
		exp := now.Add(s.cfg.CodeLifetime)
		rec := store.AuthCode{
			Hash: HashToken(code), ClientID: g.Client.ID, RedirectURI: a.RedirectURI, Subject: g.Subject,
			Scopes: g.Scopes, Nonce: g.Nonce, SessionID: g.SessionID, AuthTime: g.AuthTime, AMR: g.AMR,
			CodeChallenge: a.CodeChallenge, CodeChallengeMethod: a.CodeChallengeMethod, Entitlements: g.Entitlements,
			Created: now, ExpiresAt: exp, RetainUntil: exp.Add(CodeRetention),
		}
		if err := s.cfg.Codes.PutCode(ctx, rec); err != nil {
			return nil, oauth.ServerError(err)
		}
		out.Code = code
	}
	var at *access
	if a.Token {
		g.Type = oauth.GrantImplicit
		minted, perr := s.mintAccess(g, now)
		if perr != nil {
			return nil, perr
		}
		at = &minted
		out.AccessToken, out.TokenType = minted.token, "Bearer"
		out.ExpiresIn = int64(minted.lifetime / time.Second)
		out.Scope = strings.Join(g.Scopes, " ")
	}
	if a.IDToken {
		var perr *oauth.Error
		if out.IDToken, perr = s.mintID(g, at, out.Code, now); perr != nil {
			return nil, perr
		}
		if out.IDToken == "" {
			return nil, oauth.ServerError(errors.New("an ID token was asked for a grant without openid or user"))
		}
	}
	// After minting: a revocation that lands later covers the tokens by
	// their issue time.
	if perr := s.sessionsEnded(ctx, g); perr != nil {
		return nil, perr
	}
	if at != nil {
		s.cfg.Audit.Info("token issued", zap.String("grant_type", oauth.GrantImplicit), zap.String("client_id", g.Client.ID),
			zap.String("sub", g.Subject), zap.String("jti", at.jti), zap.Strings("scopes", g.Scopes))
		s.recordIssued(g, oauth.GrantImplicit, at.jti)
	}
	return out, nil
}
