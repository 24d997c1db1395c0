package entitle

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
)

// DetailType is the RFC 9396 authorization details type of market-data
// entitlements, listed in discovery's authorization_details_types_supported.
const DetailType = "market_data"

// Detail is one RFC 9396 authorization_details entry of type DetailType:
// the feeds of one venue. A set is one entry per venue, so the entry's
// feeds belong to its venue alone; two independent lists of venues and of
// feeds would read as their cross product, and are not a form of ours.
//
//	{"type":"market_data","venue":"ASX","feeds":["depth","quotes"]}
type Detail struct {
	Type  string   `json:"type"`
	Venue string   `json:"venue"`
	Feeds []string `json:"feeds"`
}

// ErrDetails is wrapped by every error about authorization_details that
// are not a list of market_data entries of ours: the token and
// authorization endpoints answer it invalid_authorization_details
// (RFC 9396 §5).
var ErrDetails = errors.New("invalid authorization_details")

// Details returns the set as authorization_details: one entry per venue,
// venues and feeds in order. An empty set has none (nil).
func (s Set) Details() []Detail {
	var out []Detail
	for _, p := range s.pairs {
		if n := len(out); n > 0 && out[n-1].Venue == p.Venue {
			out[n-1].Feeds = append(out[n-1].Feeds, p.Feed)
			continue
		}
		out = append(out, Detail{Type: DetailType, Venue: p.Venue, Feeds: []string{p.Feed}})
	}
	return out
}

// FromDetails is the set of pairs the entries name. Every entry must be of
// type market_data, name a valid venue and at least one valid feed; a
// venue named by two entries holds the feeds of both.
func FromDetails(ds []Detail) (Set, error) {
	if len(ds) > MaxPairs {
		return Set{}, fmt.Errorf("%w: %d entries, at most %d", ErrDetails, len(ds), MaxPairs)
	}
	var ps []Pair
	for i, d := range ds {
		switch {
		case d.Type != DetailType:
			return Set{}, fmt.Errorf("%w: entry %d: type %q is not supported (only %q)", ErrDetails, i, d.Type, DetailType)
		case !ValidVenue(d.Venue):
			return Set{}, fmt.Errorf("%w: entry %d: venue %q is not a venue (A-Z and 0-9, at most %d)", ErrDetails, i, d.Venue, MaxVenueLen)
		case len(d.Feeds) == 0:
			return Set{}, fmt.Errorf("%w: entry %d: no feeds", ErrDetails, i)
		}
		for _, f := range d.Feeds {
			if !ValidFeed(f) {
				return Set{}, fmt.Errorf("%w: entry %d: feed %q is not a feed (a lower-case word, at most %d)", ErrDetails, i, f, MaxFeedLen)
			}
			ps = append(ps, Pair{Venue: d.Venue, Feed: f})
			if len(ps) > MaxPairs {
				return Set{}, fmt.Errorf("%w: more than %d pairs", ErrDetails, MaxPairs)
			}
		}
	}
	s, err := New(ps...)
	if err != nil {
		return Set{}, fmt.Errorf("%w: %w", ErrDetails, err)
	}
	return s, nil
}

// ParseDetails reads an authorization_details value: a JSON array of
// entries, strictly (no unknown or repeated members, no other type, no
// trailing data). The caller bounds its length.
func ParseDetails(b []byte) (Set, error) {
	var ds []Detail
	if err := json.Unmarshal(b, &ds, json.RejectUnknownMembers(true)); err != nil {
		return Set{}, fmt.Errorf("%w: %w", ErrDetails, err)
	}
	if ds == nil {
		return Set{}, fmt.Errorf("%w: not a JSON array", ErrDetails)
	}
	return FromDetails(ds)
}

// MarshalDetails is the set's authorization_details as JSON: an array, []
// for the empty set.
func (s Set) MarshalDetails() []byte {
	ds := s.Details()
	if ds == nil {
		ds = []Detail{}
	}
	b, err := json.Marshal(ds, json.Deterministic(true))
	if err != nil {
		panic(err) // strings and slices of strings: cannot fail
	}
	return b
}

// FromClaim reads the authorization_details claim of a verified token, as
// a JSON decoder of any kind left it ([]any of map[string]any): the
// market_data entries, ignoring entries of other types (a token may carry
// details of types the gateway does not check). A market_data entry that
// is malformed is an error: a token whose entitlements cannot be read
// grants none.
func FromClaim(v any) (Set, error) {
	if v == nil {
		return Set{}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return Set{}, fmt.Errorf("%w: the claim is not an array", ErrDetails)
	}
	var ds []Detail
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return Set{}, fmt.Errorf("%w: entry %d is not an object", ErrDetails, i)
		}
		if m["type"] != DetailType {
			continue
		}
		d := Detail{Type: DetailType}
		d.Venue, _ = m["venue"].(string)
		feeds, _ := m["feeds"].([]any)
		for _, f := range feeds {
			fs, ok := f.(string)
			if !ok {
				return Set{}, fmt.Errorf("%w: entry %d: a feed is not a string", ErrDetails, i)
			}
			d.Feeds = append(d.Feeds, fs)
		}
		if len(m) != 3 || len(feeds) != len(d.Feeds) {
			return Set{}, fmt.Errorf("%w: entry %d: want exactly type, venue and feeds", ErrDetails, i)
		}
		ds = append(ds, d)
	}
	return FromDetails(ds)
}

// ParseClaim reads an authorization_details claim from a verified token's
// JSON as FromClaim does (repeated members refused).
func ParseClaim(raw []byte) (Set, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return Set{}, fmt.Errorf("%w: %w", ErrDetails, err)
	}
	return FromClaim(v)
}
