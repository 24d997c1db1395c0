package tokens

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
)

// Refresh tokens (docs/design.md, "Token rules"). A token names its family and
// generation besides its secret, and carries a tag:
// "<family id>~<generation>~<secret>~<tag>". Only the SHA-256 of the whole
// token is stored, in the family row (current and previous generation), so
// knowing a family id forges nothing and a family's storage stays the same
// however often it rotates. The tag, a MAC with the server secret over the
// rest, proves in constant time that the server minted the token: a token
// with a bad tag is refused before the store is read, and an old
// generation's token with a good one is a genuine replay. Tokens of the
// first scheme (random text, a row each) still refresh once: that rotation
// converts their family.
const (
	// MaxRefreshTokenLen bounds a refresh token a request may send.
	MaxRefreshTokenLen = 512
	// RefreshSecretName names the server secret successors are derived
	// with; it is sealed like the signing keys.
	RefreshSecretName = "refresh-successor-v2"
	tokenSep          = "~"
	// tagLen is the tag's length in bytes (128 bits).
	tagLen = 16
)

func errBadRefresh(cause error) *oauth.Error {
	return &oauth.Error{Code: oauth.ErrInvalidGrant, Description: "the refresh token is invalid, expired or revoked", Cause: cause}
}

// HashToken is how refresh tokens are stored: SHA-256 of the token text.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// parsed is a refresh token of the constant scheme, split.
type parsed struct {
	family     string
	generation int
	body       string // the token without its tag
	tag        string
}

// parse splits a token of the constant scheme; ok is false for a legacy
// token or garbage. It does not check the tag.
func parse(token string) (parsed, bool) {
	body, tag, ok := cutLast(token, tokenSep)
	if !ok || tag == "" {
		return parsed{}, false
	}
	fam, rest, ok := strings.Cut(body, tokenSep)
	if !ok || fam == "" {
		return parsed{}, false
	}
	genText, secret, ok := strings.Cut(rest, tokenSep)
	if !ok || secret == "" || strings.Contains(secret, tokenSep) {
		return parsed{}, false
	}
	gen, err := strconv.Atoi(genText)
	if err != nil || gen < 1 || strconv.Itoa(gen) != genText {
		return parsed{}, false
	}
	return parsed{family: fam, generation: gen, body: body, tag: tag}, true
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// format makes a token of the constant scheme, with its tag.
func (s *Service) format(family string, generation int, secret string) string {
	body := family + tokenSep + strconv.Itoa(generation) + tokenSep + secret
	return body + tokenSep + s.tag(body)
}

// tag is the MAC of a token's body with the server secret.
func (s *Service) tag(body string) string {
	m := hmac.New(sha256.New, s.cfg.RefreshSecret)
	m.Write([]byte("gatehouse refresh tag v1\x00"))
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:tagLen])
}

// minted reports, in constant time, whether the server minted p.
func (s *Service) minted(p parsed) bool {
	return hmac.Equal([]byte(s.tag(p.body)), []byte(p.tag))
}

// successorOf derives the token that replaces parent, of generation
// generation: HMAC(server secret, family salt, parent). Every instance
// sharing the store derives the same successor, so a concurrent refresh
// inside the grace window gets the same answer without any plaintext kept;
// the random salt per family means a stolen store plus an old token of one
// family tells nothing of another.
func (s *Service) successorOf(family string, salt []byte, parent string, generation int) string {
	m := hmac.New(sha256.New, s.cfg.RefreshSecret)
	m.Write([]byte("gatehouse refresh successor v2\x00"))
	m.Write(salt)
	m.Write([]byte{0})
	m.Write([]byte(parent))
	return s.format(family, generation, base64.RawURLEncoding.EncodeToString(m.Sum(nil)))
}

// newFamily is a family about to be stored, with its first token.
type newFamily struct {
	row   store.RefreshFamily
	token string
}

// prepareFamily makes a new family for g and its first token.
func (s *Service) prepareFamily(g Grant, now time.Time) (*newFamily, *oauth.Error) {
	famID, err := randomID(16)
	if err != nil {
		return nil, oauth.ServerError(err)
	}
	secret, err := randomID(32)
	if err != nil {
		return nil, oauth.ServerError(err)
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, oauth.ServerError(err)
	}
	token := s.format(famID, 1, secret)
	pol := g.Client.Refresh
	row := store.RefreshFamily{
		ID: famID, ClientID: g.Client.ID, Subject: g.Subject, Scopes: g.Scopes, Entitlements: g.Entitlements,
		AuthTime: g.AuthTime, AMR: g.AMR, Created: now, ExpiresAt: now.Add(pol.AbsoluteLifetime),
		Salt: salt, Generation: 1, Current: HashToken(token), SessionID: g.SessionID,
	}
	row.CurrentExpiresAt = slidingExpiry(now, pol, row.ExpiresAt)
	return &newFamily{row: row, token: token}, nil
}

func slidingExpiry(now time.Time, pol clients.RefreshPolicy, absolute time.Time) time.Time {
	exp := now.Add(pol.SlidingLifetime)
	if exp.After(absolute) {
		return absolute
	}
	return exp
}

// Refresh is the refresh grant for client c (RFC 6749 §6, docs/api-surface.md
// §4.3). Every refresh rotates: a new access token and a new refresh token.
// A replayed token revokes its family (RFC 9700 §4.14), except the same
// parent sent again by the same client inside the grace window before its
// successor was used, which gets the same successor. ask may narrow the
// scopes and the market-data pairs.
func (s *Service) Refresh(ctx context.Context, c *clients.Client, token string, ask Ask) (*Response, *oauth.Error) {
	if len(token) > MaxRefreshTokenLen {
		return nil, errBadRefresh(errors.New("refresh token too long"))
	}
	if p, ok := parse(token); ok {
		if !s.minted(p) {
			return nil, errBadRefresh(errors.New("refresh token with a bad tag"))
		}
		return s.refresh(ctx, c, token, p, ask)
	}
	return s.refreshLegacy(ctx, c, token, ask)
}

// usable checks a family against the client and the clock.
func usable(c *clients.Client, fam store.RefreshFamily, now time.Time) *oauth.Error {
	switch {
	case fam.ClientID != c.ID:
		// Not this client's token: refuse, but do not let another client
		// revoke the family.
		return errBadRefresh(errors.New("refresh token issued to another client"))
	case !fam.RevokedAt.IsZero():
		return errBadRefresh(errors.New("refresh token family revoked"))
	case !now.Before(fam.ExpiresAt):
		return errBadRefresh(errors.New("refresh token family expired"))
	}
	return nil
}

// refresh refreshes a token of the constant scheme.
func (s *Service) refresh(ctx context.Context, c *clients.Client, token string, p parsed, ask Ask) (*Response, *oauth.Error) {
	st := s.cfg.Store
	now := s.cfg.Now()
	// One read for the family and its subject: the rotation's checks
	// need nothing else from the store.
	state, err := st.RefreshState(ctx, p.family)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errBadRefresh(errors.New("unknown refresh token family"))
	case err != nil:
		return nil, oauth.ServerError(err)
	}
	fam := state.Family
	if perr := usable(c, fam, now); perr != nil {
		return nil, perr
	}
	hash := HashToken(token)
	if p.generation == fam.Generation && hashEqual(hash, fam.Current) {
		if !now.Before(fam.CurrentExpiresAt) {
			return nil, errBadRefresh(errors.New("refresh token expired"))
		}
		g, perr := s.grantOf(c, state, ask)
		if perr != nil {
			return nil, perr
		}
		successor := s.successorOf(fam.ID, fam.Salt, token, p.generation+1)
		err := st.RotateRefreshFamily(ctx, fam.ID, p.generation, HashToken(successor), slidingExpiry(now, c.Refresh, fam.ExpiresAt), now)
		if resp, perr, done := s.rotated(err, g, successor, now); done {
			return resp, perr
		}
		// Lost the compare-and-swap to a concurrent refresh: read what won.
		if fam, err = st.RefreshFamily(ctx, fam.ID); err != nil {
			return nil, oauth.ServerError(err)
		}
	}
	if p.generation == fam.Generation-1 && hashEqual(hash, fam.Previous) {
		return s.graceOrReplay(ctx, c, fam, token, p.generation, ask, now)
	}
	if p.generation < fam.Generation-1 {
		// Minted by the server (its tag says so) for an old generation.
		return nil, s.replayed(ctx, fam, now)
	}
	return nil, errBadRefresh(errors.New("unknown refresh token"))
}

// rotated answers after a rotation's compare-and-swap: done unless it lost
// to a concurrent refresh (ErrAlreadyRotated), which the caller resolves.
func (s *Service) rotated(err error, g Grant, successor string, now time.Time) (*Response, *oauth.Error, bool) {
	switch {
	case err == nil:
		resp, perr := s.refreshed(g, successor, now, false)
		return resp, perr, true
	case errors.Is(err, store.ErrFamilyRevoked):
		return nil, errBadRefresh(err), true
	case !errors.Is(err, store.ErrAlreadyRotated):
		return nil, oauth.ServerError(err), true
	}
	return nil, nil, false
}

// graceOrReplay answers the previous generation's token: inside the grace
// window, and while its successor (the current token) is unused, the same
// successor again; otherwise a replay. The window does not run while this
// process found the store unreachable (Config.Outages).
func (s *Service) graceOrReplay(ctx context.Context, c *clients.Client, fam store.RefreshFamily, parent string, generation int, ask Ask, now time.Time) (*Response, *oauth.Error) {
	grace := c.Refresh.Grace
	successor := s.successorOf(fam.ID, fam.Salt, parent, generation+1)
	if grace > 0 && s.sinceRotation(fam, now) <= grace && hashEqual(HashToken(successor), fam.Current) {
		g, perr := s.refreshGrant(ctx, c, fam, ask)
		if perr != nil {
			return nil, perr
		}
		return s.refreshed(g, successor, now, true)
	}
	return nil, s.replayed(ctx, fam, now)
}

// sinceRotation is how long ago fam was last rotated, less the time the
// store was unreachable meanwhile: a client whose refresh was answered
// 503 while its rotation committed (the answer lost with the connection)
// could not have sent the token again while the store was away.
func (s *Service) sinceRotation(fam store.RefreshFamily, now time.Time) time.Duration {
	elapsed := now.Sub(fam.RotatedAt)
	if s.cfg.Outages != nil {
		elapsed -= s.cfg.Outages.Unavailable(fam.RotatedAt, now)
	}
	return elapsed
}

// replayed revokes a family whose token was replayed (RFC 9700 §4.14.2).
func (s *Service) replayed(ctx context.Context, fam store.RefreshFamily, now time.Time) *oauth.Error {
	if err := s.cfg.Store.RevokeRefreshFamily(ctx, fam.ID, now, s.revocationUntil(now)); err != nil {
		return oauth.ServerError(err)
	}
	s.cfg.Audit.Warn("refresh token replay detected", zap.String("client_id", fam.ClientID),
		zap.String("sub", fam.Subject), zap.String("family_id", fam.ID))
	if s.cfg.FamilyRevoked != nil {
		if err := s.cfg.FamilyRevoked(ctx, now); err != nil {
			return oauth.ServerError(err)
		}
	}
	return errBadRefresh(errors.New("refresh token replayed: family revoked"))
}

// refreshLegacy refreshes a token of the first scheme, converting its
// family.
func (s *Service) refreshLegacy(ctx context.Context, c *clients.Client, token string, ask Ask) (*Response, *oauth.Error) {
	st := s.cfg.Store
	now := s.cfg.Now()
	rec, fam, err := st.LegacyRefreshToken(ctx, HashToken(token))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errBadRefresh(errors.New("unknown refresh token"))
	case err != nil:
		return nil, oauth.ServerError(err)
	}
	if perr := usable(c, fam, now); perr != nil {
		return nil, perr
	}
	if rec.RotatedAt.IsZero() {
		if !now.Before(rec.ExpiresAt) {
			return nil, errBadRefresh(errors.New("refresh token expired"))
		}
		g, perr := s.refreshGrant(ctx, c, fam, ask)
		if perr != nil {
			return nil, perr
		}
		salt := make([]byte, 16)
		if _, err := rand.Read(salt); err != nil {
			return nil, oauth.ServerError(err)
		}
		successor := s.successorOf(fam.ID, salt, token, 2)
		err := st.ConvertLegacyFamily(ctx, rec.Hash, salt, HashToken(successor), slidingExpiry(now, c.Refresh, fam.ExpiresAt), now)
		if resp, perr, done := s.rotated(err, g, successor, now); done {
			return resp, perr
		}
		if fam, err = st.RefreshFamily(ctx, fam.ID); err != nil {
			return nil, oauth.ServerError(err)
		}
	}
	// Rotated before: the parent of the converted family inside the grace
	// window, or a replay.
	if fam.Generation == 2 && hashEqual(rec.Hash, fam.Previous) {
		return s.graceOrReplay(ctx, c, fam, token, 1, ask, now)
	}
	return nil, s.replayed(ctx, fam, now)
}

// Lookup finds the family of a live refresh token: the current generation's
// token (or an unrotated legacy one) of a family that is neither revoked
// nor expired. ok is false for any other token.
func (s *Service) Lookup(ctx context.Context, token string) (fam store.RefreshFamily, expiresAt time.Time, ok bool, err error) {
	if len(token) > MaxRefreshTokenLen {
		return store.RefreshFamily{}, time.Time{}, false, nil
	}
	now := s.cfg.Now()
	hash := HashToken(token)
	if p, parsedOK := parse(token); parsedOK {
		if !s.minted(p) {
			return store.RefreshFamily{}, time.Time{}, false, nil
		}
		fam, err = s.cfg.Store.RefreshFamily(ctx, p.family)
		if err == nil && p.generation == fam.Generation && hashEqual(hash, fam.Current) {
			expiresAt, ok = fam.CurrentExpiresAt, true
		}
	} else {
		var rec store.RefreshToken
		rec, fam, err = s.cfg.Store.LegacyRefreshToken(ctx, hash)
		if err == nil && rec.RotatedAt.IsZero() {
			expiresAt, ok = rec.ExpiresAt, true
		}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.RefreshFamily{}, time.Time{}, false, nil
	case err != nil:
		return store.RefreshFamily{}, time.Time{}, false, err
	}
	if !ok || !fam.RevokedAt.IsZero() || !now.Before(expiresAt) || !now.Before(fam.ExpiresAt) {
		return store.RefreshFamily{}, time.Time{}, false, nil
	}
	return fam, expiresAt, true, nil
}

// FamilyOf is the family of a refresh token this server minted (its tag
// valid), whatever its generation: the current one or an earlier one,
// rotated since. The revocation endpoint revokes that family (RFC 7009
// §2.1, RFC 9700 §4.14), as the token endpoint does when an earlier
// generation is presented. ok is false for a token not ours (a forged
// tag, a made-up family), a family no longer stored, or a legacy token
// not stored.
func (s *Service) FamilyOf(ctx context.Context, token string) (fam store.RefreshFamily, ok bool, err error) {
	if len(token) > MaxRefreshTokenLen {
		return store.RefreshFamily{}, false, nil
	}
	if p, parsedOK := parse(token); parsedOK {
		if !s.minted(p) {
			return store.RefreshFamily{}, false, nil
		}
		fam, err = s.cfg.Store.RefreshFamily(ctx, p.family)
		if err == nil && p.generation > fam.Generation {
			return store.RefreshFamily{}, false, nil // a generation never minted: not this family's
		}
	} else {
		_, fam, err = s.cfg.Store.LegacyRefreshToken(ctx, HashToken(token))
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.RefreshFamily{}, false, nil
	case err != nil:
		return store.RefreshFamily{}, false, err
	}
	return fam, true, nil
}

// Revoke revokes a family, and every access token issued from it, as
// the revocation endpoint does (RFC 7009).
// Now is the service's clock: what its revocations are stamped with.
func (s *Service) Now() time.Time { return s.cfg.Now() }

func (s *Service) Revoke(ctx context.Context, familyID string) error {
	now := s.cfg.Now()
	if err := s.cfg.Store.RevokeRefreshFamily(ctx, familyID, now, s.revocationUntil(now)); err != nil {
		return fmt.Errorf("revoking refresh family: %w", err)
	}
	return nil
}

func hashEqual(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && subtle.ConstantTimeCompare(a, b) == 1
}

// Ask is what a refresh request asks for beyond its token: fewer scopes
// (its scope parameter) and fewer market-data pairs (its
// authorization_details, oauth.AskedDetails). The zero Ask keeps all the
// grant may give.
type Ask struct {
	Scope   string
	Details *entitle.Set
}

// refreshGrant rebuilds the grant of a family: the user must still exist
// and be enabled; the scopes are the family's, narrowed by what the client
// and user may hold now and by a scope parameter (RFC 6749 §6: no scope
// beyond the original grant); the market-data pairs are the family's that
// the user still holds, narrowed by authorization_details (RFC 9396:
// asking for a pair outside them is invalid_authorization_details).
func (s *Service) refreshGrant(ctx context.Context, c *clients.Client, fam store.RefreshFamily, ask Ask) (Grant, *oauth.Error) {
	state := store.RefreshState{Family: fam}
	user, err := s.cfg.Store.UserBySubject(ctx, fam.Subject)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return Grant{}, oauth.ServerError(err)
	default:
		state.User = &user
		if state.SessionsEnded, err = s.sessionsEndedAt(ctx, fam.Subject, fam.AuthTime); err != nil {
			return Grant{}, oauth.ServerError(err)
		}
	}
	return s.grantOf(c, state, ask)
}

// grantOf is refreshGrant of a family read with what it needs of its
// subject (store.RefreshState).
func (s *Service) grantOf(c *clients.Client, state store.RefreshState, ask Ask) (Grant, *oauth.Error) {
	fam, user := state.Family, state.User
	switch {
	case user == nil:
		return Grant{}, errBadRefresh(errors.New("user no longer exists"))
	case user.Disabled:
		return Grant{}, errBadRefresh(errors.New("user disabled"))
	}
	held := oauth.Intersect(oauth.Intersect(fam.Scopes, c.Scopes), user.Scopes)
	// A scope that needs a second factor stays only if the family's
	// sign-in passed one: families from before the requirement lose it.
	scopes := s.FitFactors(true, held, fam.AMR)
	if ask.Scope != "" {
		want, perr := oauth.ParseScope(ask.Scope)
		if perr != nil {
			return Grant{}, perr
		}
		for _, sc := range want {
			switch {
			case !slices.Contains(held, sc):
				return Grant{}, oauth.NewError(oauth.ErrInvalidScope, "scope "+oauth.QuoteScope(sc)+" exceeds the original grant")
			case !slices.Contains(scopes, sc):
				return Grant{}, oauth.NewError(oauth.ErrInvalidScope, "scope "+oauth.QuoteScope(sc)+
					" needs a second factor, which the sign-in of this refresh token did not pass: sign in again through the authorization endpoint")
			}
		}
		scopes = want
	}
	// The family's pairs that the user still holds, of which the request
	// may ask for fewer: a refresh never widens.
	pairs, perr := oauth.NarrowDetails(fam.Entitlements.Intersect(user.Entitlements), ask.Details)
	if perr != nil {
		return Grant{}, perr
	}
	if state.SessionsEnded && !fam.AuthTime.IsZero() {
		return Grant{}, errSessionsEnded()
	}
	return Grant{Client: c, User: user, Subject: fam.Subject, Scopes: scopes, AuthTime: fam.AuthTime, AMR: fam.AMR,
		Type: oauth.GrantRefreshToken, FamilyID: fam.ID, Entitlements: pairs}, nil
}

// refreshed mints the access (and ID) token of a successful refresh.
func (s *Service) refreshed(g Grant, successor string, now time.Time, grace bool) (*Response, *oauth.Error) {
	at, perr := s.mintAccess(g, now)
	if perr != nil {
		return nil, perr
	}
	resp := newResponse(g, at)
	resp.RefreshToken = successor
	if resp.IDToken, perr = s.mintID(g, &at, "", now); perr != nil {
		return nil, perr
	}
	s.cfg.Audit.Info("token issued", zap.String("grant_type", oauth.GrantRefreshToken), zap.String("client_id", g.Client.ID),
		zap.String("sub", g.Subject), zap.String("jti", at.jti), zap.Strings("scopes", g.Scopes),
		zap.Stringer("entitlements", g.Entitlements), zap.Bool("grace", grace))
	s.recordIssued(g, oauth.GrantRefreshToken, at.jti)
	return resp, nil
}
