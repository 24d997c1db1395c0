package store

import (
	"context"
	"time"
)

// Store is everything the identity server keeps. Implementations are safe for
// concurrent use by many goroutines and, where the backend allows it, by many
// processes sharing the same database. Every method takes a context first and
// honours its cancellation. Times are stored with at least millisecond
// precision and returned in UTC.
//
// Store is composed of role interfaces, so that each package takes only the
// part it uses (the password checker takes Users and Counters; the
// verifier takes a RevocationLister); the storetest suite's groups follow
// the same roles.
type Store interface {
	Secrets
	Keys
	Users
	Refresh
	Revocations
	Counters
	Maintenance

	// Close releases the backend's resources.
	Close() error
}

// Secrets are the server secrets shared by every instance.
type Secrets interface {
	// Secret returns the server secret called name, creating it with
	// generate when it does not exist yet. Two callers racing to create it
	// both get the one that was stored first.
	Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error)
}

// Keys are the signing keys and their schedule.
type Keys interface {
	// AddSigningKey stores a new signing key. ErrAlreadyExists if its ID is taken.
	AddSigningKey(ctx context.Context, k SigningKey) error
	// SigningKeys lists every stored signing key, oldest first.
	SigningKeys(ctx context.Context) ([]SigningKey, error)
	// UpdateSigningKey replaces the schedule fields of the key with k.ID
	// (the key material never changes). ErrNotFound if there is none.
	UpdateSigningKey(ctx context.Context, k SigningKey) error
	// DeleteSigningKey removes a key. ErrNotFound if there is none.
	DeleteSigningKey(ctx context.Context, id string) error
}

// Users are the accounts that may log in with a password.
type Users interface {
	// CreateUser stores a new user. ErrAlreadyExists if the username or the
	// subject is taken.
	CreateUser(ctx context.Context, u User) error
	// UpdateUser replaces the user with u.Username. ErrNotFound if there is none.
	UpdateUser(ctx context.Context, u User) error
	// ReplacePasswordHash sets the password hash of username to newHash,
	// and Updated to now, if the hash is still oldHash: a compare-and-swap,
	// so that upgrading a hash on login never overwrites a password changed
	// meanwhile. ErrNotFound if there is no such user or its hash is no
	// longer oldHash.
	ReplacePasswordHash(ctx context.Context, username, oldHash, newHash string, now time.Time) error
	// User returns the user with this username. ErrNotFound if there is none.
	User(ctx context.Context, username string) (User, error)
	// UserBySubject returns the user with this subject id. ErrNotFound if there is none.
	UserBySubject(ctx context.Context, subject string) (User, error)
	// Users lists every user, ordered by username.
	Users(ctx context.Context) ([]User, error)
}

// Refresh are the refresh-token families.
type Refresh interface {
	// CreateRefreshFamily stores a new family with its first token and the
	// access token issued alongside it, atomically.
	CreateRefreshFamily(ctx context.Context, f RefreshFamily, first RefreshToken, at IssuedAccessToken) error
	// RefreshToken returns the token with this hash and its family.
	// ErrNotFound if there is none.
	RefreshToken(ctx context.Context, hash []byte) (RefreshToken, RefreshFamily, error)
	// RotateRefreshToken is the compare-and-swap of a refresh: if the token
	// with parentHash has not been rotated and its family is not revoked, it
	// is marked rotated at now with child's hash as its successor, child is
	// stored in the same family, and the access token is recorded, all in one
	// atomic step. Otherwise nothing changes and the error is
	// ErrAlreadyRotated, ErrFamilyRevoked or ErrNotFound. Of many concurrent
	// callers with the same parent, exactly one succeeds. ErrAlreadyExists
	// if child's hash is taken (and nothing changes).
	RotateRefreshToken(ctx context.Context, parentHash []byte, child RefreshToken, at IssuedAccessToken, now time.Time) error
	// RecordAccessToken records an access token issued from a family (for
	// a grace-window refresh, which rotates nothing), so that revoking the
	// family revokes it too. ErrFamilyRevoked if the family is revoked,
	// ErrNotFound if there is none.
	RecordAccessToken(ctx context.Context, familyID string, at IssuedAccessToken) error
	// RevokeRefreshFamily revokes a family at now, and every access token
	// recorded for it that has not expired yet. Revoking a revoked family
	// changes nothing and is not an error; ErrNotFound if there is none.
	RevokeRefreshFamily(ctx context.Context, familyID string, now time.Time) error
}

// RevocationLister lists revoked access tokens; the verifier takes one.
type RevocationLister interface {
	// Revocations lists the revoked access tokens that have not expired at
	// now, oldest revocation first. (Here and in DeleteExpired, a record
	// whose expiry equals now has expired, as a JWT's "exp" does.)
	Revocations(ctx context.Context, now time.Time) ([]Revocation, error)
}

// Revocations are the revoked access tokens.
type Revocations interface {
	RevocationLister
	// RevokeAccessToken records the revocation of the access token jti that
	// expires at exp. Revoking twice is not an error.
	RevokeAccessToken(ctx context.Context, jti string, exp, now time.Time) error
	// AccessTokenRevoked reports whether the access token jti has been
	// revoked (and the revocation not yet removed by DeleteExpired).
	AccessTokenRevoked(ctx context.Context, jti string) (bool, error)
}

// Counters are the brute-force defence's failure counters.
type Counters interface {
	// Admit counts one attempt against key (brute-force defence),
	// atomically, before the attempt is evaluated. If the key is locked at
	// now, nothing changes and admitted is false. Otherwise: a counter whose
	// window started window or longer before now starts a new window at
	// now with count 0; the count grows by one; when it is limit or more,
	// the key is locked until now+lockout (so an attempt after a lock
	// ended, in the same window, locks again; a window reset leaves
	// LockedUntil as it was); admitted is true. It returns the counter
	// after the call. Of many concurrent callers on one key, at most limit
	// are admitted in a window (until a Refund).
	Admit(ctx context.Context, key string, now time.Time, window time.Duration, limit int, lockout time.Duration) (c Counter, admitted bool, err error)
	// Refund takes back one attempt that Admit admitted, given the counter
	// Admit returned for it: if the key's window is still that counter's,
	// the count drops by one, and the lock ends when the count falls below
	// limit or when that attempt itself set the lock (its count was limit
	// or more). In another window, or without a counter, nothing changes.
	// Not an error either way.
	Refund(ctx context.Context, key string, admitted Counter, limit int) error
	// Counter returns the counter of key; a zero Counter (with Key set) if
	// there is none.
	Counter(ctx context.Context, key string) (Counter, error)
	// ResetCounter removes the counter of key. Removing a missing counter
	// is not an error.
	ResetCounter(ctx context.Context, key string) error
}

// Maintenance removes what has expired.
type Maintenance interface {
	// DeleteExpired removes what has expired at now: refresh families past
	// their absolute expiry with their tokens and their recorded access
	// tokens, the records of expired access tokens of other families, and
	// revocations of expired access tokens. It returns how many records
	// (families, tokens, access-token records, revocations) it removed.
	// It also removes failure counters with no lock in force at now whose
	// window began 24 hours or more before now; those are not counted.
	DeleteExpired(ctx context.Context, now time.Time) (int64, error)
}

// SigningKey is a private key the identity server signs tokens with, and its
// lifecycle: published from Created, signing from SignFrom until RetireAt,
// published until RemoveAt (zero: not scheduled).
type SigningKey struct {
	ID        string    // the JWT "kid"
	Algorithm string    // e.g. "RS256"
	Private   []byte    // PKCS#8 DER, possibly encrypted by the caller
	Created   time.Time // when the key was generated
	SignFrom  time.Time // the key signs from this time on
	RetireAt  time.Time // the key stops signing at this time (zero: not scheduled)
	RemoveAt  time.Time // the key leaves the key set at this time (zero: not scheduled)
}

// User is an account that may log in with a password.
type User struct {
	Username      string   // login name, unique, case-sensitive
	Subject       string   // fixed subject id ("sub"), unique
	PasswordHash  string   // PHC-encoded argon2id, or bcrypt
	DisplayName   string   // friendly name ("name" claim)
	Email         string   // e-mail address ("email" claim)
	EmailVerified bool     // whether the e-mail address has been verified
	Scopes        []string // the scopes the user may hold
	Roles         []string // roles ("role" claim)
	Disabled      bool     // a disabled user cannot log in or refresh
	Created       time.Time
	Updated       time.Time
}

// RefreshFamily is every refresh token descended from one grant.
type RefreshFamily struct {
	ID        string
	ClientID  string
	Subject   string
	Scopes    []string
	AuthTime  time.Time // when the user authenticated
	Created   time.Time
	ExpiresAt time.Time // absolute expiry: no token of the family lives past it
	RevokedAt time.Time // zero unless revoked
}

// RefreshToken is one token of a family, stored only as a hash.
type RefreshToken struct {
	Hash      []byte // SHA-256 of the token
	FamilyID  string
	Parent    []byte // hash of the token it replaced (nil for the first)
	IssuedAt  time.Time
	ExpiresAt time.Time // sliding expiry of this token
	RotatedAt time.Time // zero until it is rotated
	Successor []byte    // hash of the token that replaced it
}

// IssuedAccessToken names an access token issued from a refresh family.
type IssuedAccessToken struct {
	JTI       string
	ExpiresAt time.Time
}

// Revocation is a revoked access token.
type Revocation struct {
	JTI       string
	ExpiresAt time.Time
	RevokedAt time.Time
}

// Counter counts failures against a key (a user, a source address, or the
// pair) for brute-force defence.
type Counter struct {
	Key         string
	Count       int       // failures in the current window
	WindowStart time.Time // when the current window began
	LockedUntil time.Time // zero, or the end of a lockout
}

// Locked reports whether the counter's key is locked at now.
func (c Counter) Locked(now time.Time) bool { return now.Before(c.LockedUntil) }
