package verify

import "fmt"

// Reason says why a token was refused.
type Reason string

// Reasons, each its own so logs and metrics can tell attacks apart.
const (
	ReasonMalformed       Reason = "malformed"        // not a compact JWS, bad base64 or JSON
	ReasonTooLarge        Reason = "too_large"        // over the size bound
	ReasonAlgorithm       Reason = "bad_algorithm"    // alg not pinned (none, HS256, ...)
	ReasonType            Reason = "bad_type"         // typ is not an accepted access-token type
	ReasonForeignKey      Reason = "foreign_key"      // jku, jwk, x5u or x5c header
	ReasonUnknownKey      Reason = "unknown_key"      // kid not in the key set
	ReasonSignature       Reason = "bad_signature"    // signature does not verify
	ReasonExpired         Reason = "expired"          // exp is past
	ReasonNotYetValid     Reason = "not_yet_valid"    // nbf or iat is in the future
	ReasonMissingExpiry   Reason = "missing_expiry"   // no exp claim
	ReasonIssuer          Reason = "wrong_issuer"     // iss is not the configured issuer
	ReasonAudience        Reason = "wrong_audience"   // aud lacks the configured audience
	ReasonRevoked         Reason = "revoked"          // jti was revoked
	ReasonKeysUnavailable Reason = "keys_unavailable" // the key set could not be fetched
	// ReasonEntitlementsChanged: the subject's market-data entitlements
	// changed after the token was issued (and nothing else revoked it);
	// the Error's Narrowed is what the token still holds.
	ReasonEntitlementsChanged Reason = "entitlements_changed"
)

// Error is a refused token. Reason is safe to log and to count; Cause is
// internal detail for the log only. Neither carries the token.
type Error struct {
	Reason Reason
	Cause  error
	// Narrowed, with ReasonEntitlementsChanged only, is the token's
	// identity as it stands after the change: its Entitlements are the
	// token's pairs that the subject still holds (possibly none), every
	// other field the token's (Claims are the token's as signed). A holder
	// of a long-lived session (the message gateway) may keep its session
	// with it, ending only what needed a pair it lost; an HTTP resource
	// refuses the token (Authorize does), as the client gets a token of
	// the new set by refreshing. Shared like any Identity: read-only.
	Narrowed *Identity
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("token refused: %s: %v", e.Reason, e.Cause)
	}
	return "token refused: " + string(e.Reason)
}

func (e *Error) Unwrap() error { return e.Cause }

func refuse(r Reason, cause error) *Error { return &Error{Reason: r, Cause: cause} }
