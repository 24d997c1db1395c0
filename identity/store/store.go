package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
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
	Audit
	MFA
	Passkeys

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
	// subject is taken; ErrSubjectDeleted if the subject was a deleted
	// user's.
	CreateUser(ctx context.Context, u User) error
	// UpdateUser replaces the user with u.Username. ErrNotFound if there is none.
	UpdateUser(ctx context.Context, u User) error
	// DeleteUser deletes the user called username, its consents and its
	// second factors (MFA, Passkeys), ends its sessions as RevokeSubject(subject,
	// now, tokensUntil) does, and retires its subject, which CreateUser
	// then gives no one (a subject is never reassigned, OpenID Connect
	// Core §2; the username may be taken again). It returns the user deleted; ErrNotFound if there is
	// none. On SQLite it is one transaction; on PostgreSQL the user is
	// gone once the first commits, and a second ends what a login racing
	// the delete stored meanwhile (an error from it still names the user).
	DeleteUser(ctx context.Context, username string, now, tokensUntil time.Time) (User, error)
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
	// UsersWithSubjects returns the users whose subject equals one of
	// subjects without regard to ASCII case, in no order: a scan of the
	// subjects alone, for a few subjects in a large table.
	UsersWithSubjects(ctx context.Context, subjects []string) ([]User, error)
	// DeletedSubjects returns those of subjects that were deleted users'
	// (DeleteUser), compared as UsersWithSubjects compares, spelled as
	// they were stored, in no order.
	DeletedSubjects(ctx context.Context, subjects []string) ([]string, error)
	// UpdateEntitlements sets the market-data entitlements of username to
	// what update returns, given the ones stored, in one transaction
	// (update may be called again if the backend retries it). When the
	// set changes, Updated becomes now and the same transaction records
	// the subject's entitlement change: a Revocation with Subject,
	// NotBefore now, Entitlements the new set and ExpiresAt tokensUntil,
	// replacing the subject's earlier one, so that the subject's access
	// tokens issued before are refused (Revocation.Narrows). Nothing is
	// written when the set is the same. It returns the user after the
	// call; ErrNotFound if there is none; update's error, wrapped, with
	// nothing changed. CreateUser stores a new user's entitlements;
	// UpdateUser never changes them, so that a change always goes through
	// here.
	UpdateEntitlements(ctx context.Context, username string, update func(entitle.Set) (entitle.Set, error), now, tokensUntil time.Time) (User, error)
}

// MFA are the users' second factors, by subject (never reassigned): a
// TOTP factor each, and recovery codes. DeleteUser deletes them with the
// user, in its transaction.
type MFA interface {
	// TOTP returns the subject's TOTP factor. ErrNotFound if it has none.
	TOTP(ctx context.Context, subject string) (TOTPFactor, error)
	// PutTOTP stores f as its subject's TOTP factor, replacing any (an
	// enrolment confirmed by its first code).
	PutTOTP(ctx context.Context, f TOTPFactor) error
	// AdvanceTOTP sets the subject's factor's LastStep to step if it is
	// below step and the factor's Secret is still secret (the factor the
	// code was checked against, not one enrolled since), and reports
	// whether it did: a compare-and-set, so that of two requests with one
	// code, on one instance or two, one sees true; false is a code of a
	// step accepted already, or of a factor replaced. ErrNotFound if the
	// subject has no factor.
	AdvanceTOTP(ctx context.Context, subject string, secret []byte, step int64) (bool, error)
	// DeleteTOTP removes the subject's TOTP factor. ErrNotFound if it has
	// none.
	DeleteTOTP(ctx context.Context, subject string) error
	// ResetMFA removes the subject's TOTP factor and recovery codes (not
	// its passkeys), whichever it has, in one transaction: a reset is
	// never half done. It stores the audit change ctx carries
	// (WithAuditChange) in that transaction.
	ResetMFA(ctx context.Context, subject string) error
	// ReplaceRecoveryCodes replaces the subject's recovery codes with the
	// codes whose hashes are given (none: the subject has none left), in
	// one transaction, which stores the audit change ctx carries
	// (WithAuditChange).
	ReplaceRecoveryCodes(ctx context.Context, subject string, hashes [][]byte, now time.Time) error
	// RecoveryCodes returns the hashes of the subject's unspent recovery
	// codes, in no order.
	RecoveryCodes(ctx context.Context, subject string) ([][]byte, error)
	// SpendRecoveryCode deletes the subject's recovery code with hash and
	// reports whether there was one: of two requests spending one code,
	// one sees true.
	SpendRecoveryCode(ctx context.Context, subject string, hash []byte) (bool, error)
}

// TOTPFactor is a user's TOTP factor (RFC 6238).
type TOTPFactor struct {
	// Subject is the user's subject.
	Subject string
	// Secret is the shared secret as the caller keeps it: sealed at rest
	// by the caller, as private signing keys are.
	Secret []byte
	// LastStep is the time step of the last code accepted, 0 if none:
	// a code of that step or an earlier one is refused.
	LastStep int64
	// Created is when the factor was enrolled.
	Created time.Time
}

// MaxPasskeys is how many passkeys a subject may have: AddPasskey
// refuses one more with ErrTooManyPasskeys.
const MaxPasskeys = 20

// Bounds of a Passkey's fields, which AddPasskey and RenamePasskey check.
const (
	// MaxPasskeyName is the longest name, in bytes.
	MaxPasskeyName = 64
	// MaxCredentialID is the longest credential id, in bytes (WebAuthn
	// Level 3 §5.8.3: at most 1023).
	MaxCredentialID = 1023
	// MaxPasskeyPublicKey is the longest public key (COSE_Key), in bytes.
	MaxPasskeyPublicKey = 2048
)

// Passkeys are the users' WebAuthn credentials (passkeys), by subject
// (never reassigned), each known by its credential id, unique across
// subjects. DeleteUser deletes them with the user, in its transaction.
type Passkeys interface {
	// AddPasskey stores p. ErrAlreadyExists if its credential id is
	// taken (by any subject); ErrTooManyPasskeys if its subject has
	// MaxPasskeys already; an error, with nothing stored, for a field
	// out of its bounds. Adds for one subject are serialized, so
	// concurrent ones leave at most MaxPasskeys.
	AddPasskey(ctx context.Context, p Passkey) error
	// Passkeys lists the subject's passkeys, oldest first.
	Passkeys(ctx context.Context, subject string) ([]Passkey, error)
	// PasskeyByID returns the passkey with credential id id, whoever's
	// it is. ErrNotFound if there is none.
	PasskeyByID(ctx context.Context, id []byte) (Passkey, error)
	// UsePasskey records a use of the passkey id whose authenticator
	// counted signCount: a compare-and-set that sets SignCount to
	// signCount and LastUsed to now, and reports true, only if signCount
	// is above the stored count, or both are 0 (an authenticator without
	// a counter). Otherwise nothing changes and it reports false: a count
	// that did not grow is a cloned authenticator or a replay (WebAuthn
	// Level 3 §7.2 step 22), and of concurrent uses with one count one
	// sees true. ErrNotFound if there is no such passkey.
	UsePasskey(ctx context.Context, id []byte, signCount uint32, now time.Time) (bool, error)
	// RenamePasskey sets the name of the subject's passkey id.
	// ErrNotFound if the subject has no such passkey.
	RenamePasskey(ctx context.Context, subject string, id []byte, name string) error
	// DeletePasskey removes the subject's passkey id. ErrNotFound if the
	// subject has no such passkey.
	DeletePasskey(ctx context.Context, subject string, id []byte) error
}

// Passkey is a user's WebAuthn credential, as a relying party keeps it
// (WebAuthn Level 3 §4, "credential record").
type Passkey struct {
	// ID is the credential id, unique.
	ID []byte
	// Subject is the user's subject.
	Subject string
	// Name is the user's name for the passkey, at most MaxPasskeyName
	// bytes.
	Name string
	// PublicKey is the credential public key, a COSE_Key.
	PublicKey []byte
	// SignCount is the authenticator's signature counter at its last
	// use; 0 for an authenticator without one.
	SignCount uint32
	// AAGUID names the authenticator's model (16 bytes; zero for most
	// passkeys registered without attestation).
	AAGUID []byte
	// Transports are the authenticator's transports ("internal",
	// "hybrid", "usb", ...), as hints to the browser.
	Transports []string
	// BackupEligible: the credential may be synced (the BE flag, fixed
	// at registration); BackupState: it was backed up then (BS).
	BackupEligible bool
	BackupState    bool
	// Created is when the passkey was registered; LastUsed when it last
	// signed a user in (zero: never).
	Created  time.Time
	LastUsed time.Time
}

// Check is an error when p is out of the bounds a store keeps.
func (p Passkey) Check() error {
	switch {
	case len(p.ID) == 0 || len(p.ID) > MaxCredentialID:
		return fmt.Errorf("a credential id of %d bytes (1 to %d)", len(p.ID), MaxCredentialID)
	case p.Subject == "":
		return errors.New("no subject")
	case len(p.Name) > MaxPasskeyName:
		return fmt.Errorf("a name of %d bytes (at most %d)", len(p.Name), MaxPasskeyName)
	case len(p.PublicKey) == 0 || len(p.PublicKey) > MaxPasskeyPublicKey:
		return fmt.Errorf("a public key of %d bytes (1 to %d)", len(p.PublicKey), MaxPasskeyPublicKey)
	case len(p.AAGUID) > 16:
		return fmt.Errorf("an AAGUID of %d bytes", len(p.AAGUID))
	case len(p.Transports) > 8:
		return fmt.Errorf("%d transports", len(p.Transports))
	case p.Created.IsZero():
		return errors.New("no time of registration")
	}
	for _, t := range p.Transports {
		if t == "" || len(t) > 32 {
			return fmt.Errorf("a transport of %d bytes", len(t))
		}
	}
	return nil
}

// FamilyBound bounds a user's refresh families with a client
// (Refresh.CreateRefreshFamily).
type FamilyBound struct {
	// Keep is how many families of a subject and client remain after a
	// create, the new one included; 0 is no bound.
	Keep int
	// TokensLife is how long an access token issued from a family may be
	// accepted (its lifetime and a verifier's leeway): a family the bound
	// deletes is revoked for that long when it may have issued one still
	// accepted.
	TokensLife time.Duration
}

// Refresh are the refresh-token families (docs/design.md, "Token rules"). A
// family costs the store the same after one rotation as after ten
// thousand: its row holds the hash of the current generation's token and
// of the previous one (for the grace window). Families made before that
// scheme (legacy families: a row per token, a row per access token) keep
// working until their next rotation converts them.
type Refresh interface {
	// CreateRefreshFamily stores a new family: f with Generation 1, its
	// Current hash and CurrentExpiresAt set, no Previous; any other f is
	// refused with an error and nothing stored. ErrAlreadyExists if f.ID
	// is taken. With bound.Keep > 0, the same transaction then deletes
	// families of f's Subject and ClientID until Keep remain with f, so a
	// user's families with a client stay bounded however many grants
	// they make: of those not expired at f.Created (expired ones are the
	// purge's), the live ones (not revoked, current token unexpired) stay
	// first, then the most recently used (rotated, else created; no time
	// first to go). A deleted family that was not revoked and was used
	// within bound.TokensLife is revoked first, until bound.TokensLife
	// after f.Created, so the access tokens issued from it end with it;
	// the revocations recorded for a deleted family stay. Creates for one
	// subject and client are serialized, so concurrent ones leave at most
	// Keep.
	CreateRefreshFamily(ctx context.Context, f RefreshFamily, bound FamilyBound) error
	// RefreshFamily returns the family with this id. ErrNotFound if there
	// is none.
	RefreshFamily(ctx context.Context, id string) (RefreshFamily, error)
	// RefreshState returns the family with this id and, from the same
	// read, what a refresh of it checks of its subject (RefreshState):
	// the refresh grant's one read before its rotation. ErrNotFound if
	// there is no such family.
	RefreshState(ctx context.Context, id string) (RefreshState, error)
	// RotateRefreshFamily is the compare-and-swap of a refresh: if the
	// family's Generation is still from and it is not revoked, Previous
	// becomes Current, Current becomes next, CurrentExpiresAt becomes
	// nextExpiresAt, Generation becomes from+1 and RotatedAt now, in one
	// atomic step. Otherwise nothing changes and the error is
	// ErrAlreadyRotated, ErrFamilyRevoked or ErrNotFound. Of many
	// concurrent callers with the same from, exactly one succeeds. from is
	// 1 or more: a legacy family (generation 0) rotates only through
	// ConvertLegacyFamily, and from < 1 is an error that changes nothing.
	RotateRefreshFamily(ctx context.Context, id string, from int, next []byte, nextExpiresAt, now time.Time) error
	// RevokeRefreshFamily revokes a family at now, and with it every
	// access token issued from it: it records a Revocation with FamilyID
	// that lasts until tokensUntil (the latest expiry of an access token
	// the family can have issued), and, for a family that is or was legacy,
	// revokes the access tokens recorded for it by jti (those carry no
	// "fid"). Revoking a revoked family
	// changes nothing and is not an error; ErrNotFound if there is none.
	RevokeRefreshFamily(ctx context.Context, id string, now, tokensUntil time.Time) error

	// LegacyRefreshToken returns the legacy token with this hash (SHA-256
	// of the token text) and its family. ErrNotFound if there is none.
	LegacyRefreshToken(ctx context.Context, hash []byte) (RefreshToken, RefreshFamily, error)
	// ConvertLegacyFamily rotates a legacy token into the constant scheme,
	// as one compare-and-swap: if the legacy token parentHash has not been
	// rotated and its family is not revoked, the token is marked rotated at
	// now with next as its successor, and the family takes salt, Generation
	// 2, Previous parentHash, Current next, CurrentExpiresAt nextExpiresAt
	// and RotatedAt now. Otherwise nothing changes: ErrAlreadyRotated,
	// ErrFamilyRevoked or ErrNotFound. Of many concurrent callers, exactly
	// one succeeds. (A legacy family has one unrotated token at a time, so
	// it converts once.)
	ConvertLegacyFamily(ctx context.Context, parentHash, salt, next []byte, nextExpiresAt, now time.Time) error
}

// RevocationLister lists revocations; the verifier takes one.
type RevocationLister interface {
	// Revocations lists the revocations that have not expired at now,
	// oldest revocation first. (Here and in DeleteExpired, a record whose
	// expiry equals now has expired, as a JWT's "exp" does.)
	Revocations(ctx context.Context, now time.Time) ([]Revocation, error)
	// RevocationsSince lists, as Revocations does, those of them revoked
	// at since or later, for a verifier that keeps its list up to date
	// without reading it whole.
	RevocationsSince(ctx context.Context, since, now time.Time) ([]Revocation, error)
}

// Revocations are the revoked access tokens.
type Revocations interface {
	RevocationLister
	// RevokeAccessToken records the revocation of the access token jti that
	// expires at exp. Revoking twice is not an error.
	RevokeAccessToken(ctx context.Context, jti string, exp, now time.Time) error
	// RevokeSubject ends every session of a subject at now (a disabled
	// user, a changed password): it revokes the subject's families,
	// deletes its browser sessions and unused authorization codes, denies
	// the device authorizations it approved and no device used (a store
	// without them has none), and
	// records a Revocation with Subject and NotBefore now, lasting until
	// tokensUntil, so that every access token of the subject issued
	// before now is refused. Not an error when the subject has nothing.
	RevokeSubject(ctx context.Context, subject string, now, tokensUntil time.Time) error
	// AccessTokenRevoked reports whether an access token is revoked: its
	// jti, its family or its subject (issued at iat, before the subject's
	// NotBefore), by a revocation not yet removed by DeleteExpired.
	AccessTokenRevoked(ctx context.Context, jti, familyID, subject string, iat time.Time) (bool, error)
	// EntitlementChange returns the subject's entitlement change in force
	// (Users.UpdateEntitlements: the last one, until DeleteExpired removes
	// it), for a check that must read the store (introspection) to apply
	// with Revocation.Narrows. ErrNotFound if there is none.
	EntitlementChange(ctx context.Context, subject string) (Revocation, error)
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
	// Entitlements are the market-data pairs the user holds
	// (docs/entitlements.md): set by CreateUser and UpdateEntitlements.
	Entitlements entitle.Set
	Created      time.Time
	Updated      time.Time
}

// RefreshFamily is every refresh token descended from one grant.
type RefreshFamily struct {
	ID       string
	ClientID string
	Subject  string
	Scopes   []string
	AuthTime time.Time // when the user authenticated
	// AMR are the authentication methods of the sign-in the family was
	// issued from (RFC 8176); a scope that needs a second factor is kept
	// at a refresh only when they include one.
	AMR       []string
	Created   time.Time
	ExpiresAt time.Time // absolute expiry: no token of the family lives past it
	RevokedAt time.Time // zero unless revoked
	// SessionID is the login session ("sid") the family was granted
	// through (the browser flows); "" for other grants.
	SessionID string
	// Entitlements are the market-data pairs the family was granted: a
	// refresh issues those the user still holds, never more.
	Entitlements entitle.Set

	// The constant scheme; all zero for a legacy family.
	Salt             []byte    // random per family, mixed into successor derivation
	Generation       int       // the current token's generation, from 1
	Current          []byte    // hash of the current generation's token
	CurrentExpiresAt time.Time // sliding expiry of the current token
	Previous         []byte    // hash of the previous generation's token; nil for generation 1
	RotatedAt        time.Time // when Current replaced Previous; zero for generation 1
}

// RefreshState is a refresh family with what refreshing it checks of its
// subject (Refresh.RefreshState).
type RefreshState struct {
	Family RefreshFamily
	// User is the user whose subject is the family's; nil if there is
	// none.
	User *User
	// SessionsEnded reports whether the subject's sessions were ended
	// after the family's AuthTime, as AccessTokenRevoked(ctx, "", "",
	// Subject, AuthTime) would; false when AuthTime is zero.
	SessionsEnded bool
}

// Legacy reports whether f is a legacy family (a row per token).
func (f RefreshFamily) Legacy() bool { return f.Generation == 0 }

// RefreshToken is one token of a legacy family, stored only as a hash.
type RefreshToken struct {
	Hash      []byte // SHA-256 of the token
	FamilyID  string
	Parent    []byte // hash of the token it replaced (nil for the first)
	IssuedAt  time.Time
	ExpiresAt time.Time // sliding expiry of this token
	RotatedAt time.Time // zero until it is rotated
	Successor []byte    // hash of the token that replaced it
}

// IssuedAccessToken names an access token issued from a legacy family
// (recorded by jti, so that revoking the family revokes it).
type IssuedAccessToken struct {
	JTI       string
	ExpiresAt time.Time
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

// LegacySeeder is implemented by a backend that can hold legacy families
// (those made before the constant scheme), so that the conformance suite
// can test their conversion. Only tests call it.
type LegacySeeder interface {
	// SeedLegacyFamily stores a legacy family with its tokens and the
	// access tokens recorded for it.
	SeedLegacyFamily(ctx context.Context, f RefreshFamily, tokens []RefreshToken, ats []IssuedAccessToken) error
}

// FoldASCII is s with its ASCII letters in lower case, as SQL's lower()
// folds a subject in both stores (UsersWithSubjects).
func FoldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
