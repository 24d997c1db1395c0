package tokens

import (
	"context"
	"errors"
	"slices"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
)

// MaxDeviceCodeLen bounds a device code read from a request.
const MaxDeviceCodeLen = 128

func errBadDeviceCode(cause string) *oauth.Error {
	return &oauth.Error{Code: oauth.ErrInvalidGrant, Description: "the device code is invalid or used", Cause: errors.New(cause)}
}

// errSlowDown answers a poll sooner than the interval (RFC 8628 §3.5);
// grown says whether the interval grew.
func errSlowDown(grown bool) *oauth.Error {
	if !grown {
		return oauth.NewError(oauth.ErrSlowDown, "polling too fast: wait the interval")
	}
	return oauth.NewError(oauth.ErrSlowDown, "polling too fast: wait the interval, now longer by 5 seconds")
}

// DevicesEnabled reports whether the service exchanges device codes
// (Config.Devices is set).
func (s *Service) DevicesEnabled() bool { return s.cfg.Devices != nil }

// ExchangeDeviceCode is the device access token request (RFC 8628 §3.4,
// §3.5) of the authenticated client c. The code must be c's, unexpired
// and unused; a poll sooner than the interval after the previous one is
// answered slow_down (and the interval grows by 5 seconds, up to
// store.MaxPollInterval; past it, such a poll is answered from a read,
// and the store is not written); a pending
// authorization is answered authorization_pending, a denied one
// access_denied; an approved one issues tokens exactly once. A refused
// request changes nothing but the poll's time and interval.
//
// The tokens hold the user's market-data pairs, or those the device
// authorization request asked for (store.DeviceCode.AskedEntitlements),
// of which asked, the token request's own, may ask for fewer. The user is
// read at this request: a pair the device asked for that the user does
// not hold now is invalid_authorization_details (RFC 9396 §5), as it is
// at the authorization endpoint once the user is known; the code is not
// used, so a device that polls again once the user holds it gets its
// tokens while the code lives.
func (s *Service) ExchangeDeviceCode(ctx context.Context, c *clients.Client, code string, asked *entitle.Set) (*Response, *oauth.Error) {
	if s.cfg.Devices == nil {
		return nil, oauth.NewError(oauth.ErrUnsupportedGrantType, "unsupported grant_type")
	}
	if len(code) > MaxDeviceCodeLen {
		return nil, errBadDeviceCode("device code too long")
	}
	hash := HashToken(code)
	rec, err := s.cfg.Devices.DeviceCode(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errBadDeviceCode("unknown device code")
	case err != nil:
		return nil, oauth.ServerError(err)
	}
	now := s.cfg.Now()
	switch {
	case rec.ClientID != c.ID:
		// Not this client's: refuse, and do not let it poll for another.
		return nil, errBadDeviceCode("device code issued to another client")
	case !rec.UsedAt.IsZero():
		return nil, errBadDeviceCode("device code used before")
	case !now.Before(rec.ExpiresAt):
		return nil, oauth.NewError(oauth.ErrExpiredToken, "the device code has expired")
	}
	if rec.Interval >= store.MaxPollInterval && !rec.LastPolledAt.IsZero() &&
		now.Before(rec.LastPolledAt.Add(rec.Interval-store.PollTolerance(rec.Interval))) {
		// Too soon, and the interval has grown all it may: nothing to
		// record, so no write (store.MaxPollInterval).
		return nil, errSlowDown(false)
	}
	old := rec.Interval
	rec, err = s.cfg.Devices.PollDeviceCode(ctx, hash, now)
	switch {
	case errors.Is(err, store.ErrSlowDown):
		return nil, errSlowDown(rec.Interval > old)
	case errors.Is(err, store.ErrNotFound):
		return nil, errBadDeviceCode("device code purged")
	case err != nil:
		return nil, oauth.ServerError(err)
	}
	switch rec.State {
	case store.DevicePending:
		return nil, oauth.NewError(oauth.ErrAuthorizationPending, "the user has not yet approved the request")
	case store.DeviceDenied:
		return nil, oauth.NewError(oauth.ErrAccessDenied, "the user denied the request")
	case store.DeviceApproved:
	default:
		return nil, oauth.ServerError(errors.New("device authorization in an unknown state"))
	}
	return s.issueFromDevice(ctx, c, rec, hash, asked)
}

// issueFromDevice issues the tokens of an approved authorization, once:
// ConsumeDeviceCode decides which of concurrent exchanges issues them.
func (s *Service) issueFromDevice(ctx context.Context, c *clients.Client, rec store.DeviceCode, hash []byte, asked *entitle.Set) (*Response, *oauth.Error) {
	now := s.cfg.Now()
	user, err := s.cfg.Store.UserBySubject(ctx, rec.Subject)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errBadDeviceCode("user no longer exists")
	case err != nil:
		return nil, oauth.ServerError(err)
	case user.Disabled:
		return nil, errBadDeviceCode("user disabled")
	}
	// What the device asked for, if the user holds all of it; then what
	// this request asks for of that: never more.
	pairs, perr := oauth.NarrowDetails(user.Entitlements, rec.AskedEntitlements)
	if perr != nil {
		return nil, perr
	}
	if pairs, perr = oauth.NarrowDetails(pairs, asked); perr != nil {
		return nil, perr
	}
	g := Grant{
		Client: c, User: &user, Subject: rec.Subject, AuthTime: rec.AuthTime, AMR: rec.AMR, Type: oauth.GrantDeviceCode,
		Scopes:       s.FitFactors(true, oauth.Intersect(oauth.Intersect(rec.Scopes, c.Scopes), user.Scopes), rec.AMR),
		SessionID:    rec.SessionID,
		Entitlements: pairs,
	}
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
	switch _, err := s.cfg.Devices.ConsumeDeviceCode(ctx, hash, now, issue); {
	case errors.Is(err, store.ErrCodeUsed):
		return nil, errBadDeviceCode("device code used by a concurrent request")
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrDeviceCodeNotApproved):
		return nil, errBadDeviceCode("device code purged or no longer approved")
	case err != nil:
		return nil, oauth.ServerError(err)
	}
	return s.issueFromCode(ctx, g, fam, jti, now)
}
