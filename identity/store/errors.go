package store

import "errors"

var (
	// ErrNotFound: the record asked for does not exist (or has been removed).
	ErrNotFound = errors.New("store: not found")
	// ErrAlreadyExists: a create met a record with the same key.
	ErrAlreadyExists = errors.New("store: already exists")
	// ErrAlreadyRotated: a refresh token was rotated before; the caller lost
	// the compare-and-swap or is replaying the token.
	ErrAlreadyRotated = errors.New("store: refresh token already rotated")
	// ErrFamilyRevoked: the refresh-token family has been revoked.
	ErrFamilyRevoked = errors.New("store: refresh token family revoked")
	// ErrCodeUsed: an authorization code was used before (a replay, or
	// the loser of a race).
	ErrCodeUsed = errors.New("store: authorization code already used")
)
