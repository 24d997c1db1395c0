package tokens

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
)

// Store is what minting and refresh families need of the store; a code
// replay revokes an access token by its jti (Revocations).
type Store interface {
	store.Refresh
	store.Users
	store.Revocations
}

// Config configures a Service.
type Config struct {
	// Issuer is the "iss" of every token. Required.
	Issuer string
	// Audience is the "aud" of every access token. Required.
	Audience string
	// IDTokenLifetime is how long ID tokens live. Required.
	IDTokenLifetime time.Duration
	// Keys signs. Required.
	Keys *keys.Manager
	// Store keeps refresh families. Required.
	Store Store
	// RefreshSecret derives refresh-token successors; every instance
	// sharing the store must use the same one. Required.
	RefreshSecret []byte
	// MaxAccessLifetime is the longest lifetime of an access token any
	// client gets, plus the largest leeway a verifier accepts a token with
	// past its expiry (verify.MaxLeeway): a revocation lasts that long.
	// Required.
	MaxAccessLifetime time.Duration
	// Audit receives token events. Default: no-op.
	Audit *zap.Logger
	// Record receives the audit records of the tokens issued (audit.go).
	// Default: none.
	Record Auditor
	// FamilyRevoked, if set, is called after replay detection (of a
	// refresh token or of an authorization code) revoked tokens, so that
	// this instance's verifiers refuse them at once (RFC 9700 §4.14.2), as
	// an explicit revocation does.
	FamilyRevoked func(ctx context.Context, since time.Time) error
	// Outages, if set, says when the store's database was unreachable
	// from this process (store.Outages, the PostgreSQL store): that time
	// does not count against a refresh token's grace window, so a refresh
	// whose answer an outage swallowed (its rotation committed, the client
	// told 503) can be sent again when the database is back, however long
	// it was away. Default: the grace window runs on the clock alone.
	Outages store.Outages
	// Codes keeps authorization codes. Default: none, and the service
	// issues and exchanges no code (CodesEnabled is false).
	Codes store.Codes
	// Sessions, if set, says whether a code's login session still
	// exists: a code of a session that ended (a logout) is refused, so
	// no refresh family starts after the logout that ended its session.
	Sessions interface {
		SessionExists(ctx context.Context, id string) (bool, error)
	}
	// Devices keeps device authorizations (RFC 8628). Default: none, and
	// the service exchanges no device code (DevicesEnabled is false).
	Devices store.DeviceCodes
	// CodeLifetime is how long an authorization code may be exchanged.
	// Default DefaultCodeLifetime (60s).
	CodeLifetime time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// SecondFactorScopes are the scopes a user's token carries only when
	// the sign-in it comes from passed a second factor (oauth.MultiFactor
	// of its AMR): every grant drops them otherwise, a refresh included,
	// so a family signed in with one factor loses them at its next
	// rotation. Client credentials are not subject to it.
	SecondFactorScopes []string
	// IsClient, if set, reports whether id names a registered client
	// (compared without regard to case, as a resource may compare owners).
	// A user whose subject is one gets no token: a client_credentials
	// token's sub is its client's ID, so every resource would take that
	// user and that client for one principal (one set of rows, one
	// revocation, one owner).
	IsClient func(id string) bool
}

// Service mints tokens and keeps refresh-token families. It is safe for
// concurrent use and holds no mutable state of its own.
type Service struct {
	cfg Config
}

// NewService checks cfg and returns the service.
func NewService(cfg Config) (*Service, error) {
	if cfg.Issuer == "" || cfg.Audience == "" || cfg.Keys == nil || cfg.Store == nil || len(cfg.RefreshSecret) == 0 ||
		cfg.IDTokenLifetime <= 0 || cfg.MaxAccessLifetime <= 0 {
		return nil, errors.New("token service needs an issuer, an audience, lifetimes, keys, a store and a refresh secret")
	}
	if cfg.Audit == nil {
		cfg.Audit = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CodeLifetime < 0 {
		return nil, errors.New("token service: the code lifetime must not be negative")
	}
	if cfg.CodeLifetime == 0 {
		cfg.CodeLifetime = DefaultCodeLifetime
	}
	return &Service{cfg: cfg}, nil
}

// Grant is what a grant established, for the service to mint tokens from.
type Grant struct {
	Client   *clients.Client
	User     *store.User // nil for client credentials
	Subject  string
	Scopes   []string
	AuthTime time.Time // zero for client credentials
	// AMR are the authentication methods of the user's sign-in (RFC
	// 8176); none for client credentials.
	AMR      []string
	Type     string // the grant type, for the audit log
	FamilyID string // the refresh-token family it comes from, if any
	// Entitlements are the market-data pairs the grant gives: what its
	// holder holds (a user's, a client_credentials client's), narrowed by
	// what the request asked for (oauth.NarrowDetails).
	Entitlements entitle.Set
	// Nonce and SessionID go into the ID token (browser flows).
	Nonce     string
	SessionID string
}

// Response is the success body of the token endpoint (docs/api-surface.md §2.2,
// RFC 6749 §5.1).
type Response struct {
	AccessToken  string `json:"access_token"`
	ExpiresIn    int64  `json:"expires_in"`
	TokenType    string `json:"token_type"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope,omitempty"`
	IDToken      string `json:"id_token,omitempty"`
	// AuthorizationDetails are the access token's market-data pairs, when
	// it carries any (RFC 9396 §7).
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
}

// MaxAccessTokenBytes bounds an access token, as verifiers bound it
// (verify.DefaultMaxTokenSize): a token over it would be refused by every
// resource, so it is not issued.
const MaxAccessTokenBytes = 8 << 10

// details is the authorization_details of a grant's pairs; nil for none.
func details(s entitle.Set) json.RawMessage {
	if s.IsEmpty() {
		return nil
	}
	return s.MarshalDetails()
}

// newResponse is the token response of an access token at for g.
func newResponse(g Grant, at access) *Response {
	return &Response{AccessToken: at.token, ExpiresIn: int64(at.lifetime / time.Second), TokenType: "Bearer",
		Scope: strings.Join(g.Scopes, " "), AuthorizationDetails: details(g.Entitlements)}
}

// access is a signed access token and what the store records of it.
type access struct {
	token    string
	jti      string
	expires  time.Time
	lifetime time.Duration
}

// newJTI is a new access token's id.
func newJTI() (string, *oauth.Error) {
	jti, err := randomID(16)
	if err != nil {
		return "", oauth.ServerError(err)
	}
	return jti, nil
}

// mintAccess signs an access token for g at now, with a new jti.
func (s *Service) mintAccess(g Grant, now time.Time) (access, *oauth.Error) {
	jti, perr := newJTI()
	if perr != nil {
		return access{}, perr
	}
	return s.mintAccessID(g, jti, now)
}

// familyBound is the bound on g's user's families with g's client: an
// access token issued from a family may be accepted for MaxAccessLifetime
// after its last rotation, and the grace window's reissue of that
// rotation may come up to Grace later.
func (s *Service) familyBound(g Grant) store.FamilyBound {
	return store.FamilyBound{Keep: g.Client.Refresh.MaxPerUser, TokensLife: s.cfg.MaxAccessLifetime + max(g.Client.Refresh.Grace, 0)}
}

// subjectIsClient refuses a user grant whose subject is a client's ID
// (Config.IsClient); the log gets why, the client a server_error.
func (s *Service) subjectIsClient(g Grant) *oauth.Error {
	if g.User == nil || s.cfg.IsClient == nil || !s.cfg.IsClient(g.Subject) {
		return nil
	}
	return oauth.ServerError(fmt.Errorf("user %q has the subject %q, which is a client's ID: it gets no token, since a client_credentials token's sub is its client's ID (give the user another subject)",
		g.User.Username, g.Subject))
}

// mintAccessID signs an access token for g at now with the id jti.
func (s *Service) mintAccessID(g Grant, jti string, now time.Time) (access, *oauth.Error) {
	if perr := s.subjectIsClient(g); perr != nil {
		return access{}, perr
	}
	lifetime := g.Client.AccessLifetime
	exp := now.Add(lifetime)
	claims := accessClaims{
		Issuer: s.cfg.Issuer, Subject: g.Subject, Audience: s.cfg.Audience,
		Expiry: exp.Unix(), IssuedAt: now.Unix(), NotBefore: now.Unix(), ID: jti,
		ClientID: g.Client.ID, Scope: strings.Join(g.Scopes, " "), FamilyID: g.FamilyID,
		ProfileClaims: UserClaims(g.User, g.Scopes), AuthorizationDetails: details(g.Entitlements),
	}
	if !g.AuthTime.IsZero() {
		claims.AuthTime = g.AuthTime.Unix()
	}
	if g.User != nil {
		claims.ACR, claims.AMR = oauth.ACR(g.AMR), g.AMR
	}
	tok, err := s.cfg.Keys.Sign(g.Client.AccessTokenSigningAlg, oauth.TypeAccessToken, claims, now)
	if err != nil {
		return access{}, oauth.ServerError(err)
	}
	if len(tok) > MaxAccessTokenBytes {
		// Sets are bounded where they are given (entitle.CheckTokenSize);
		// long profile claims beside a large set may still pass the bound.
		return access{}, &oauth.Error{Code: oauth.ErrInvalidAuthorizationDetails,
			Description: fmt.Sprintf("the access token would be %d bytes, over the %d a token may have: ask for fewer market-data pairs with authorization_details", len(tok), MaxAccessTokenBytes),
			Cause:       fmt.Errorf("%w: access token of %d bytes for %d pairs", entitle.ErrTooLarge, len(tok), g.Entitlements.Len())}
	}
	return access{token: tok, jti: jti, expires: exp, lifetime: lifetime}, nil
}

// mintID signs an ID token for g when it grants openid to a user: with
// at_hash when at is the access token issued with it, c_hash when code is
// the code issued with it (OpenID Connect Core §3.3.2.11).
func (s *Service) mintID(g Grant, at *access, code string, now time.Time) (string, *oauth.Error) {
	if g.User == nil || !slices.Contains(g.Scopes, oauth.ScopeOpenID) {
		return "", nil
	}
	if perr := s.subjectIsClient(g); perr != nil {
		return "", perr
	}
	claims := idClaims{
		Issuer: s.cfg.Issuer, Subject: g.Subject, Audience: g.Client.ID,
		Expiry: now.Add(s.cfg.IDTokenLifetime).Unix(), IssuedAt: now.Unix(),
		AuthTime: g.AuthTime.Unix(), ACR: oauth.ACR(g.AMR), AMR: g.AMR, Nonce: g.Nonce, SessionID: g.SessionID,
		ProfileClaims: UserClaims(g.User, g.Scopes),
	}
	alg := g.Client.IDTokenSignedResponseAlg
	if alg == "" {
		alg = s.cfg.Keys.Policy().Algorithms[0]
	}
	if at != nil {
		claims.AtHash = halfHash(alg, at.token)
	}
	if code != "" {
		claims.CHash = halfHash(alg, code)
	}
	tok, err := s.cfg.Keys.Sign(alg, oauth.TypeIDToken, claims, now)
	if err != nil {
		return "", oauth.ServerError(err)
	}
	return tok, nil
}

// Issue mints the tokens of a grant that starts a session (password,
// client credentials): an access token, a new refresh-token family when
// offline_access is granted to a user with a client that may refresh, and
// an ID token for openid.
func (s *Service) Issue(ctx context.Context, g Grant) (*Response, *oauth.Error) {
	now := s.cfg.Now()
	g.Scopes = s.FitFactors(g.User != nil, g.Scopes, g.AMR)
	var fam *newFamily
	if g.User != nil && slices.Contains(g.Scopes, oauth.ScopeOfflineAccess) && g.Client.AllowsGrant(oauth.GrantRefreshToken) {
		var perr *oauth.Error
		if fam, perr = s.prepareFamily(g, now); perr != nil {
			return nil, perr
		}
		g.FamilyID = fam.row.ID
	}
	at, perr := s.mintAccess(g, now)
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

// FitFactors is scopes without those that need a second factor
// (Config.SecondFactorScopes) when a user's sign-in, amr, passed none; a
// grant of no user (client credentials) keeps them all.
func (s *Service) FitFactors(user bool, scopes, amr []string) []string {
	if !user || oauth.MultiFactor(amr) || len(oauth.SecondFactorScopes(scopes, s.cfg.SecondFactorScopes)) == 0 {
		return scopes
	}
	return oauth.WithoutSecondFactorScopes(scopes, s.cfg.SecondFactorScopes)
}

// NeedsSecondFactor are the scopes of scopes that need a second factor
// (Config.SecondFactorScopes).
func (s *Service) NeedsSecondFactor(scopes []string) []string {
	return oauth.SecondFactorScopes(scopes, s.cfg.SecondFactorScopes)
}

// revocationUntil is how long a revocation made at now must last: until
// every access token it covers has expired, and a verifier's leeway past
// that (MaxAccessLifetime includes it); dropped sooner, a revoked token
// would be accepted again at its end.
func (s *Service) revocationUntil(now time.Time) time.Time {
	return now.Add(s.cfg.MaxAccessLifetime)
}

// ErrSessionsEnded is the cause of a grant sessionsEnded refuses.
var ErrSessionsEnded = errors.New("the user's sessions were ended after the grant's authentication")

// sessionsEnded refuses a grant whose authentication (g.AuthTime) the
// user's sessions were ended after (store RevokeSubject: a changed
// password, a disabled user): a code or a device approval made before, a
// family created from one, a password checked against the hash the change
// replaced while the change landed. Run after the tokens are minted, it
// keeps them from being given out; a revocation that lands after it covers
// them by their issue time, and their family by its AuthTime.
func (s *Service) sessionsEnded(ctx context.Context, g Grant) *oauth.Error {
	if g.User == nil {
		return nil
	}
	ended, err := s.sessionsEndedAt(ctx, g.Subject, g.AuthTime)
	switch {
	case err != nil:
		return oauth.ServerError(err)
	case ended:
		return errSessionsEnded()
	}
	return nil
}

// sessionsEndedAt reports whether subject's sessions were ended after
// authTime; false for the zero authTime.
func (s *Service) sessionsEndedAt(ctx context.Context, subject string, authTime time.Time) (bool, error) {
	if authTime.IsZero() {
		return false, nil
	}
	return s.cfg.Store.AccessTokenRevoked(ctx, "", "", subject, authTime)
}

// errSessionsEnded refuses a grant sessionsEnded found ended.
func errSessionsEnded() *oauth.Error {
	return &oauth.Error{Code: oauth.ErrInvalidGrant, Description: "the user's sessions were ended after this authentication",
		Cause: ErrSessionsEnded}
}
