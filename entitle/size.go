package entitle

import (
	"errors"
	"fmt"
)

// MaxDetailsBytes bounds the authorization_details of a set in an access
// token (MarshalDetails' length): 4 KiB of JSON, 5.4 KiB once the
// token's payload is base64url-encoded, leaving the rest of a token's
// 8 KiB bound to its other claims, its header and its signature. About
// 150 venues of one feed, or 40 venues of five.
const MaxDetailsBytes = 4096

// ErrTooLarge is the error of a set too large for an access token.
var ErrTooLarge = errors.New("entitlements too large for an access token")

// CheckTokenSize returns ErrTooLarge, saying by how much, when s would
// take more than MaxDetailsBytes in an access token. A holder of such a
// set gets no token carrying it: check it where the set is given (a
// command, a users file, a config) rather than at the token endpoint.
func (s Set) CheckTokenSize() error {
	if n := len(s.MarshalDetails()); n > MaxDetailsBytes {
		return fmt.Errorf("%w: %d pairs take %d bytes as authorization_details, at most %d (a token is at most 8 KiB): hold fewer venues or feeds",
			ErrTooLarge, s.Len(), n, MaxDetailsBytes)
	}
	return nil
}
