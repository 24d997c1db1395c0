package entitle

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
)

// Bounds of the grammar. A venue is what the backend calls a market, in
// upper-case letters and digits; a feed is a lower-case word.
const (
	MaxVenueLen = 16  // bytes of a venue
	MaxFeedLen  = 32  // bytes of a feed
	MaxPairs    = 512 // pairs in one set
)

// Pair is one entitlement: feed Feed of venue Venue.
type Pair struct {
	Venue string
	Feed  string
}

// String is the pair's text form, VENUE:feed.
func (p Pair) String() string { return p.Venue + ":" + p.Feed }

// compare orders pairs by venue, then feed.
func compare(a, b Pair) int {
	return cmp.Or(strings.Compare(a.Venue, b.Venue), strings.Compare(a.Feed, b.Feed))
}

// ErrSyntax is wrapped by every error about a malformed pair or set.
var ErrSyntax = errors.New("malformed entitlement")

// ValidVenue reports whether v is a venue: 1 to MaxVenueLen of A-Z and
// 0-9. Lower case is not a spelling of the same venue: it is refused.
func ValidVenue(v string) bool {
	if v == "" || len(v) > MaxVenueLen {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// ValidFeed reports whether f is a feed: a-z, then up to MaxFeedLen-1 of
// a-z, 0-9, '_' and '-'.
func ValidFeed(f string) bool {
	if f == "" || len(f) > MaxFeedLen || f[0] < 'a' || f[0] > 'z' {
		return false
	}
	for i := 1; i < len(f); i++ {
		c := f[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ParsePair reads VENUE:feed, exactly: no spaces, no other case.
func ParsePair(s string) (Pair, error) {
	venue, feed, ok := strings.Cut(s, ":")
	if !ok || !ValidVenue(venue) || !ValidFeed(feed) {
		return Pair{}, fmt.Errorf("%w %q: want VENUE:feed, the venue in A-Z and 0-9 (at most %d), the feed a lower-case word (at most %d)",
			ErrSyntax, s, MaxVenueLen, MaxFeedLen)
	}
	return Pair{Venue: venue, Feed: feed}, nil
}
