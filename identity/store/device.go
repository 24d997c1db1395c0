package store

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
)

// DeviceStore is the device authorization grant's role (RFC 8628), apart
// from Store and BrowserStore as those are: a backend implements it as
// well to serve the device flow, and the identity server serves the
// device authorization endpoint only when its store does (a type
// assertion at NewServer; without it the endpoint answers 501).
// storetest.RunDevice is its conformance suite.
type DeviceStore interface {
	DeviceCodes
}

// Device authorization states.
const (
	DevicePending  = "pending"  // waiting for the user
	DeviceApproved = "approved" // the user approved; tokens may be issued once
	DeviceDenied   = "denied"   // the user denied
)

// DeviceCodes are the device authorizations: each is found by the SHA-256
// of its device code (the client's secret) or by the keyed hash of its
// user code (what the user types). The store never sees either code.
type DeviceCodes interface {
	// PutDeviceCode stores a new, pending authorization. ErrAlreadyExists
	// if its Hash or its UserCodeHash is taken.
	PutDeviceCode(ctx context.Context, d DeviceCode) error
	// DeviceCode returns the authorization with this device-code hash,
	// in any state, expired or not. ErrNotFound if there is none.
	DeviceCode(ctx context.Context, hash []byte) (DeviceCode, error)
	// DeviceCodeByUserCode returns the authorization with this user-code
	// hash, in any state, expired or not. ErrNotFound if there is none.
	DeviceCodeByUserCode(ctx context.Context, userCodeHash []byte) (DeviceCode, error)
	// PollDeviceCode records a poll of the token endpoint at now, as one
	// compare-and-swap: if the authorization was never polled, or its
	// last poll was Interval less PollTolerance or longer before now,
	// LastPolledAt becomes
	// now and the error is nil. Otherwise (polled too fast, RFC 8628
	// §3.5) the error is ErrSlowDown, and LastPolledAt becomes now and
	// Interval grows by SlowDownStep, to MaxPollInterval at most; at
	// MaxPollInterval or past it, nothing is written. Of many concurrent
	// polls at one instant, at most one gets nil. ErrNotFound if there is
	// none. It returns the record after the call.
	PollDeviceCode(ctx context.Context, hash []byte, now time.Time) (DeviceCode, error)
	// DecideDeviceCode records the user's decision on the authorization
	// with this user-code hash: if it is pending and unexpired at now, its
	// State becomes DeviceApproved (with d's subject, scopes, auth time and
	// session) or DeviceDenied, DecidedAt now, atomically, and the error
	// is nil. Otherwise nothing changes and the error is
	// ErrDeviceCodeDecided (decided before, or expired). ErrNotFound if
	// there is none. Of many concurrent decisions, exactly one succeeds.
	DecideDeviceCode(ctx context.Context, userCodeHash []byte, now time.Time, d DeviceDecision) (DeviceCode, error)
	// ConsumeDeviceCode uses an approved authorization at now: if it is
	// approved and unused, UsedAt becomes now with issued recorded,
	// atomically, and the error is nil. If it was used before, nothing
	// changes and the error is ErrCodeUsed; if it is not approved,
	// nothing changes and the error is ErrDeviceCodeNotApproved.
	// ErrNotFound if there is none. Of many concurrent callers on one
	// approved authorization, exactly one gets nil.
	ConsumeDeviceCode(ctx context.Context, hash []byte, now time.Time, issued CodeIssue) (DeviceCode, error)
	// DeleteExpiredDeviceCodes removes the authorizations whose
	// RetainUntil has passed at now (a time equal to now has passed) and
	// returns how many.
	DeleteExpiredDeviceCodes(ctx context.Context, now time.Time) (int64, error)
}

// PollTolerance is how much sooner than its interval a poll may come and
// still be on time: a fifth of the interval, a second at most. RFC 8628
// §3.5 asks the client to wait the interval between polls; network jitter
// is no abuse (golang.org/x/oauth2's poller, waiting exactly the interval,
// arrives some milliseconds early), and slow_down would lengthen a
// compliant client's wait by 5 s each time.
func PollTolerance(interval time.Duration) time.Duration {
	return min(interval/5, time.Second)
}

// SlowDownStep is how much a device authorization's polling interval grows
// at each slow_down (RFC 8628 §3.5: "increased by 5 seconds").
const SlowDownStep = 5 * time.Second

// MaxPollInterval is the most a device authorization's polling interval
// grows to by slow_down. Past it, a poll sooner than the interval is
// answered slow_down from a read, without a write (the interval cannot
// grow, so there is nothing to record): a client polling as fast as it
// can costs the store a write per interval, and a few more on the way up.
const MaxPollInterval = time.Minute

// DeviceCode is a device authorization and its state.
type DeviceCode struct {
	Hash         []byte // SHA-256 of the device code; unique
	UserCodeHash []byte // keyed hash of the normalized user code; unique
	ClientID     string
	Scopes       []string // requested (pending) or granted (approved)
	// AskedEntitlements are the market-data pairs the device
	// authorization request's authorization_details asked for (RFC 9396
	// §6); nil when it asked for none (the device gets all the user
	// holds). It is the request's, kept as it was: the user is known only
	// at the token request, which checks it against the user's pairs.
	AskedEntitlements *entitle.Set
	Created           time.Time
	ExpiresAt         time.Time // no decision and no exchange from this time on
	// RetainUntil is when the record may be removed; until then a second
	// exchange is recognised. At least ExpiresAt.
	RetainUntil time.Time
	// Interval is the least time between two polls; it grows by
	// SlowDownStep at each slow_down.
	Interval     time.Duration
	LastPolledAt time.Time // zero until the first poll

	State     string    // DevicePending, DeviceApproved or DeviceDenied
	DecidedAt time.Time // zero while pending
	// Set when approved.
	Subject   string
	AuthTime  time.Time
	AMR       []string // the approving session's authentication methods
	SessionID string

	UsedAt    time.Time // zero until tokens are issued
	CodeIssue           // the tokens issued
}

// DeviceDecision is the user's answer on the verification page.
type DeviceDecision struct {
	Approved  bool
	Subject   string   // the user who decided
	Scopes    []string // the scopes granted (approved)
	AuthTime  time.Time
	AMR       []string
	SessionID string
}
