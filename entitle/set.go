package entitle

import (
	"fmt"
	"slices"
	"strings"
)

// Set is a set of pairs, sorted by venue then feed, without repeats. The
// zero value is the empty set. Build one with New or Parse; treat it as
// read-only once built (sets are shared between goroutines).
type Set struct {
	pairs []Pair
}

// New is the set of pairs, in any order, repeats dropped. It fails on an
// invalid pair or on more than MaxPairs distinct pairs.
func New(pairs ...Pair) (Set, error) {
	ps := slices.Clone(pairs)
	slices.SortFunc(ps, compare)
	ps = slices.Compact(ps)
	if len(ps) > MaxPairs {
		return Set{}, fmt.Errorf("%w: %d pairs, at most %d", ErrSyntax, len(ps), MaxPairs)
	}
	for _, p := range ps {
		if !ValidVenue(p.Venue) || !ValidFeed(p.Feed) {
			return Set{}, fmt.Errorf("%w %q", ErrSyntax, p.String())
		}
	}
	if len(ps) == 0 {
		ps = nil
	}
	return Set{pairs: ps}, nil
}

// MustNew is New for literals known to be valid; it panics otherwise.
func MustNew(pairs ...Pair) Set {
	s, err := New(pairs...)
	if err != nil {
		panic(err)
	}
	return s
}

// Parse reads pairs in their text form, each an element of texts or
// separated by spaces or commas within one ("ASX:quotes ASX:depth").
func Parse(texts ...string) (Set, error) {
	var ps []Pair
	for _, t := range texts {
		for _, f := range strings.FieldsFunc(t, func(r rune) bool { return r == ' ' || r == ',' }) {
			p, err := ParsePair(f)
			if err != nil {
				return Set{}, err
			}
			ps = append(ps, p)
		}
	}
	return New(ps...)
}

// MustParse is Parse for literals known to be valid; it panics otherwise.
func MustParse(texts ...string) Set {
	s, err := Parse(texts...)
	if err != nil {
		panic(err)
	}
	return s
}

// Pairs returns the set's pairs in order. The slice is the set's own: do
// not modify it.
func (s Set) Pairs() []Pair { return s.pairs }

// Len is the number of pairs.
func (s Set) Len() int { return len(s.pairs) }

// IsEmpty reports whether the set holds no pair.
func (s Set) IsEmpty() bool { return len(s.pairs) == 0 }

// Has reports whether the set holds feed of venue.
func (s Set) Has(venue, feed string) bool {
	_, ok := slices.BinarySearchFunc(s.pairs, Pair{venue, feed}, compare)
	return ok
}

// HasAll reports whether the set holds feed of every venue in venues.
// It holds feed of every venue of an empty list.
func (s Set) HasAll(venues []string, feed string) bool {
	for _, v := range venues {
		if !s.Has(v, feed) {
			return false
		}
	}
	return true
}

// Venues returns, in order, the venues whose feed the set holds.
func (s Set) Venues(feed string) []string {
	var vs []string
	for _, p := range s.pairs {
		if p.Feed == feed {
			vs = append(vs, p.Venue)
		}
	}
	return vs
}

// SubsetOf reports whether every pair of s is in t.
func (s Set) SubsetOf(t Set) bool {
	i := 0
	for _, p := range s.pairs {
		for i < len(t.pairs) && compare(t.pairs[i], p) < 0 {
			i++
		}
		if i == len(t.pairs) || t.pairs[i] != p {
			return false
		}
	}
	return true
}

// Missing returns the pairs of s that t lacks, in order.
func (s Set) Missing(t Set) []Pair {
	var out []Pair
	for _, p := range s.pairs {
		if !t.Has(p.Venue, p.Feed) {
			out = append(out, p)
		}
	}
	return out
}

// Intersect is the set of the pairs both s and t hold.
func (s Set) Intersect(t Set) Set {
	var out []Pair
	for _, p := range s.pairs {
		if t.Has(p.Venue, p.Feed) {
			out = append(out, p)
		}
	}
	return Set{pairs: out}
}

// Equal reports whether s and t hold the same pairs.
func (s Set) Equal(t Set) bool { return slices.Equal(s.pairs, t.pairs) }

// String is the set's text form: its pairs in order, separated by spaces
// (what Parse reads back).
func (s Set) String() string {
	var b strings.Builder
	for i, p := range s.pairs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.Venue)
		b.WriteByte(':')
		b.WriteString(p.Feed)
	}
	return b.String()
}

// Strings returns the pairs' text forms, in order.
func (s Set) Strings() []string {
	out := make([]string, len(s.pairs))
	for i, p := range s.pairs {
		out[i] = p.String()
	}
	return out
}
