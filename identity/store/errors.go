package store

import "errors"

var (
	// ErrNotFound: the record asked for does not exist (or has been removed).
	ErrNotFound = errors.New("store: not found")
	// ErrAlreadyExists: a create met a record with the same key.
	ErrAlreadyExists = errors.New("store: already exists")
	// ErrSubjectDeleted: a user was created with the subject of a deleted
	// user (Users.DeleteUser), which no user is given again.
	ErrSubjectDeleted = errors.New("store: the subject belonged to a deleted user")
	// ErrAlreadyRotated: a refresh token was rotated before; the caller lost
	// the compare-and-swap or is replaying the token.
	ErrAlreadyRotated = errors.New("store: refresh token already rotated")
	// ErrFamilyRevoked: the refresh-token family has been revoked.
	ErrFamilyRevoked = errors.New("store: refresh token family revoked")
	// ErrUnavailable: the backend could not reach its database (refused,
	// dropped or timed-out connections, a server shutting down). The
	// operation may or may not have taken effect (a commit whose answer
	// was lost); trying it again later is the remedy, and an endpoint
	// answers 503 temporarily_unavailable.
	ErrUnavailable = errors.New("store: database unavailable")
	// ErrCodeUsed: an authorization code was used before (a replay, or
	// the loser of a race).
	ErrCodeUsed = errors.New("store: authorization code already used")
	// ErrTooManyPasskeys: a subject with MaxPasskeys passkeys was given
	// one more.
	ErrTooManyPasskeys = errors.New("store: too many passkeys")
)

// Errors of the device authorization grant (DeviceCodes).
var (
	// ErrSlowDown: a device code was polled faster than its interval.
	ErrSlowDown = errors.New("store: device code polled too fast")
	// ErrDeviceCodeDecided: the user decided on the device authorization
	// before, or it expired.
	ErrDeviceCodeDecided = errors.New("store: device authorization already decided or expired")
	// ErrDeviceCodeNotApproved: the device authorization is not approved.
	ErrDeviceCodeNotApproved = errors.New("store: device authorization not approved")
)
