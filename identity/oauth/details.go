package oauth

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/gatehouse/gatehouse/entitle"
)

// ParamAuthorizationDetails is the request parameter of RFC 9396 §2: a
// JSON array of authorization details.
const ParamAuthorizationDetails = "authorization_details"

// AskedDetails reads the authorization_details parameter of a request
// (the authorization, device authorization and token endpoints): nil when
// it is absent (the grant holds all it may), else the market-data pairs
// it asks for. Only entries of type market_data are understood
// (entitle.ParseDetails: one entry per venue, exactly type, venue and
// feeds); anything else is invalid_authorization_details (RFC 9396 §5),
// 400.
func AskedDetails(form url.Values) (*entitle.Set, *Error) {
	raw := form.Get(ParamAuthorizationDetails)
	if raw == "" {
		return nil, nil
	}
	set, err := entitle.ParseDetails([]byte(raw))
	if err != nil {
		return nil, &Error{Code: ErrInvalidAuthorizationDetails, Description: detailsDescription(err), Cause: err}
	}
	return &set, nil
}

// detailsDescription is the client's part of a refused
// authorization_details: entitle's reason, which names what was wrong
// (an entry's index, a type, a venue or feed of the request itself), cut
// to a safe length and to the characters an error_description may hold.
func detailsDescription(err error) string {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '?'
		}
		return r
	}, msg)
}

// ErrNotHeld is the cause of a request for a pair the grant does not hold.
var ErrNotHeld = errors.New("authorization_details asks for a pair not held")

// NarrowDetails is the market-data pairs of a grant whose holder holds
// held and whose request asked for asked (nil: all that is held): asked,
// when held holds every pair of it, and invalid_authorization_details
// naming the first pair it does not otherwise (RFC 9396 §5: the details
// exceed what the holder may have). Narrowing is a subset test on
// pairs: asking never adds.
func NarrowDetails(held entitle.Set, asked *entitle.Set) (entitle.Set, *Error) {
	if asked == nil {
		return held, nil
	}
	if missing := asked.Missing(held); len(missing) > 0 {
		return entitle.Set{}, &Error{Code: ErrInvalidAuthorizationDetails,
			Description: fmt.Sprintf("authorization_details asks for %s, which this grant does not hold", missing[0]),
			Cause:       fmt.Errorf("%w: %v", ErrNotHeld, missing)}
	}
	return *asked, nil
}
