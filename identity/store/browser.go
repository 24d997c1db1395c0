package store

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
)

// The browser flows' roles (the authorization endpoint, login and
// consent). They are not part of Store: a backend implements BrowserStore
// as well to serve them, and the identity server serves the browser
// endpoints only when its store does (it checks with a type assertion at
// NewServer; without them those endpoints answer 501). So a backend can be
// written, and run the Store conformance suite, before it has them;
// storetest.RunBrowser is their own suite.

// BrowserStore is what the browser flows keep.
type BrowserStore interface {
	Sessions
	Codes
	Consents
	BrowserMaintenance
	SessionFamilies
}

// SessionFamilies finds the refresh-token families a login session led
// to, for a logout to revoke them.
type SessionFamilies interface {
	// SessionRefreshFamilies returns the families whose SessionID is sid,
	// revoked or not, oldest first. None for an empty sid.
	SessionRefreshFamilies(ctx context.Context, sid string) ([]RefreshFamily, error)
}

// Sessions are the login sessions of browsers. A session is found by the
// SHA-256 of the secret its cookie holds: the store never sees the secret.
type Sessions interface {
	// CreateSession stores a new session. ErrAlreadyExists if its Hash or
	// its ID is taken.
	CreateSession(ctx context.Context, s Session) error
	// Session returns the session whose cookie secret hashes to hash,
	// expired or not (the caller compares ExpiresAt with its clock).
	// ErrNotFound if there is none.
	Session(ctx context.Context, hash []byte) (Session, error)
	// SessionExists reports whether the session whose public ID is id is
	// stored, expired or not (a logout deletes it).
	SessionExists(ctx context.Context, id string) (bool, error)
	// TouchSession records a use of the session at now: LastSeen becomes
	// now, ExpiresAt becomes expiresAt, and client, when not empty, joins
	// Clients (once, in the order clients first joined). ErrNotFound if
	// there is no such session.
	TouchSession(ctx context.Context, hash []byte, now, expiresAt time.Time, client string) error
	// DeleteSession removes a session. Removing a missing session is not
	// an error.
	DeleteSession(ctx context.Context, hash []byte) error
	// ElevateSession moves the session of hash to newHash (a new cookie
	// secret) with the authentication methods amr and LastSeen now, in
	// one statement that keeps everything else (its public ID, clients,
	// expiries). ErrNotFound if there is no session of hash: one ended
	// meanwhile (a logout) is not brought back.
	ElevateSession(ctx context.Context, hash, newHash []byte, amr []string, now time.Time) error
}

// Codes are the authorization codes (RFC 6749 §4.1), stored by the SHA-256
// of the code. A code is exchanged once: ConsumeCode is the one
// compare-and-swap that decides which exchange wins, and it records, in the
// same step, the ids of the tokens the winner is about to issue, so that a
// second use of the code can revoke them (RFC 6749 §4.1.2).
type Codes interface {
	// PutCode stores a new, unused code. ErrAlreadyExists if its Hash is
	// taken.
	PutCode(ctx context.Context, c AuthCode) error
	// Code returns the code with this hash, used or not, expired or not.
	// ErrNotFound if there is none.
	Code(ctx context.Context, hash []byte) (AuthCode, error)
	// ConsumeCode uses the code with this hash at now. If it is unused, it
	// becomes used at now with issued recorded (UsedAt, FamilyID,
	// AccessTokenID, AccessTokenExpiresAt), atomically, and the error is
	// nil. If it was used before, nothing of its use changes, ReplayedAt is
	// set to now unless already set, and the error is ErrCodeUsed; the
	// code returned then carries what the first use recorded. ErrNotFound
	// if there is none. Of many concurrent callers on one unused code,
	// exactly one gets nil. The code returned is the record after the call.
	ConsumeCode(ctx context.Context, hash []byte, now time.Time, issued CodeIssue) (AuthCode, error)
}

// Consents are the scopes a user allowed a client, remembered so that the
// consent page is not shown again for them.
type Consents interface {
	// PutConsent stores c, replacing the consent of the same Subject and
	// ClientID if there is one.
	PutConsent(ctx context.Context, c Consent) error
	// Consent returns the consent of subject to clientID, expired or not.
	// ErrNotFound if there is none.
	Consent(ctx context.Context, subject, clientID string) (Consent, error)
	// DeleteConsent removes the consent of subject to clientID. Removing a
	// missing consent is not an error.
	DeleteConsent(ctx context.Context, subject, clientID string) error
}

// BrowserMaintenance removes what the browser flows no longer need.
type BrowserMaintenance interface {
	// DeleteExpiredBrowser removes, at now, sessions whose ExpiresAt has
	// passed, codes whose RetainUntil has passed, and consents whose
	// ExpiresAt has passed (a zero ExpiresAt never passes). A time equal
	// to now has passed. It returns how many records it removed.
	DeleteExpiredBrowser(ctx context.Context, now time.Time) (int64, error)
}

// Session is a browser's login session.
type Session struct {
	Hash     []byte    // SHA-256 of the secret in the session cookie; unique
	ID       string    // the public session id (the ID token's "sid"); unique
	Subject  string    // the user logged in
	AuthTime time.Time // when the user entered their password
	// AMR are the authentication methods the user has passed in this
	// session (RFC 8176 values: "pwd", then "otp" and "mfa" after a
	// second factor).
	AMR       []string
	Created   time.Time
	LastSeen  time.Time
	ExpiresAt time.Time // the session ends here (idle expiry, moved on by TouchSession)
	// AbsoluteExpiresAt bounds ExpiresAt however often the session is
	// used; the caller enforces it (TouchSession stores what it is given).
	AbsoluteExpiresAt time.Time
	// Clients are the clients the session has signed in to, in the order
	// they first did (for logout notifications).
	Clients []string
}

// AuthCode is an authorization code and what it was issued for.
type AuthCode struct {
	Hash        []byte // SHA-256 of the code; unique
	ClientID    string // the client it was issued to
	RedirectURI string // the redirect_uri of the authorization request, as sent
	Subject     string
	Scopes      []string
	Nonce       string    // the request's nonce, for the ID token
	SessionID   string    // the session's public id ("sid")
	AuthTime    time.Time // when the user authenticated
	AMR         []string  // the session's authentication methods
	// CodeChallenge and CodeChallengeMethod are the PKCE challenge (RFC
	// 7636); both empty when the request had none.
	CodeChallenge       string
	CodeChallengeMethod string
	// Entitlements are the market-data pairs the authorization granted
	// (all the user held, or those its authorization_details asked for);
	// the exchange issues those the user still holds.
	Entitlements entitle.Set
	Created      time.Time
	ExpiresAt    time.Time // no exchange from this time on
	// RetainUntil is when the record may be removed; until then a second
	// use is recognised as a replay. At least ExpiresAt.
	RetainUntil time.Time

	// Set by ConsumeCode.
	UsedAt     time.Time // zero until the code is used
	ReplayedAt time.Time // zero unless the code was presented after its use
	CodeIssue            // the tokens issued from the code
}

// CodeIssue names the tokens issued from a code, recorded when it is used.
type CodeIssue struct {
	FamilyID             string    // the refresh-token family; "" if none
	AccessTokenID        string    // the access token's jti
	AccessTokenExpiresAt time.Time // when that access token expires
}

// Consent is the scopes a user allowed a client.
type Consent struct {
	Subject   string
	ClientID  string
	Scopes    []string
	Created   time.Time
	ExpiresAt time.Time // zero: until revoked
}
