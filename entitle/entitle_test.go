package entitle

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

func TestParsePair(t *testing.T) {
	good := map[string]Pair{
		"ASX:quotes":    {"ASX", "quotes"},
		"NZX:depth":     {"NZX", "depth"},
		"ASX2:level_2":  {"ASX2", "level_2"},
		"CXA:top-of-bk": {"CXA", "top-of-bk"},
	}
	for in, want := range good {
		got, err := ParsePair(in)
		if err != nil || got != want {
			t.Errorf("ParsePair(%q) = %v, %v; want %v", in, got, err, want)
		}
		if got.String() != in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), in)
		}
	}
	bad := []string{"", ":", "ASX", "ASX:", ":quotes", "asx:quotes", "ASX:Quotes", "ASX :quotes", "ASX: quotes",
		"ASX:quotes:x", "ASX:1quotes", "A.SX:quotes", "ＡSX:quotes", "ASX:quotes ", "ASX\x00:quotes",
		strings.Repeat("A", MaxVenueLen+1) + ":quotes", "ASX:" + strings.Repeat("q", MaxFeedLen+1)}
	for _, in := range bad {
		if p, err := ParsePair(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParsePair(%q) = %v, %v; want ErrSyntax", in, p, err)
		}
	}
}

func TestSetOperations(t *testing.T) {
	trader := MustParse("NZX:quotes ASX:depth", "ASX:quotes,ASX:quotes")
	if got := trader.String(); got != "ASX:depth ASX:quotes NZX:quotes" {
		t.Fatalf("String = %q: not sorted or not deduplicated", got)
	}
	demo := MustParse("ASX:quotes")
	for _, c := range []struct {
		venue, feed string
		want        bool
	}{{"ASX", "quotes", true}, {"ASX", "depth", true}, {"NZX", "quotes", true}, {"NZX", "depth", false}, {"asx", "quotes", false}} {
		if got := trader.Has(c.venue, c.feed); got != c.want {
			t.Errorf("Has(%s, %s) = %v", c.venue, c.feed, got)
		}
	}
	if !demo.SubsetOf(trader) || trader.SubsetOf(demo) || !(Set{}).SubsetOf(demo) || !trader.SubsetOf(trader) {
		t.Error("SubsetOf is wrong")
	}
	if got := trader.Intersect(MustParse("NZX:quotes NZX:depth ASX:quotes")).String(); got != "ASX:quotes NZX:quotes" {
		t.Errorf("Intersect = %q", got)
	}
	if got := trader.Missing(demo); !slices.Equal(got, []Pair{{"ASX", "depth"}, {"NZX", "quotes"}}) {
		t.Errorf("Missing = %v", got)
	}
	if got := trader.Venues("quotes"); !slices.Equal(got, []string{"ASX", "NZX"}) {
		t.Errorf("Venues = %v", got)
	}
	if !trader.HasAll([]string{"ASX", "NZX"}, "quotes") || trader.HasAll([]string{"ASX", "NZX"}, "depth") {
		t.Error("HasAll is wrong")
	}
	if _, err := New(make([]Pair, 1)...); !errors.Is(err, ErrSyntax) {
		t.Errorf("New accepted the zero pair: %v", err)
	}
	many := make([]Pair, MaxPairs+1)
	for i := range many {
		many[i] = Pair{"V" + strings.Repeat("A", i%10) + string(rune('A'+i/10%26)) + string(rune('A'+i/260)), "quotes"}
	}
	if _, err := New(many...); !errors.Is(err, ErrSyntax) {
		t.Errorf("New accepted %d pairs: %v", len(many), err)
	}
}

func TestDetails(t *testing.T) {
	trader := MustParse("ASX:quotes ASX:depth NZX:quotes")
	got := string(trader.MarshalDetails())
	want := `[{"type":"market_data","venue":"ASX","feeds":["depth","quotes"]},{"type":"market_data","venue":"NZX","feeds":["quotes"]}]`
	if got != want {
		t.Fatalf("MarshalDetails =\n%s\nwant\n%s", got, want)
	}
	back, err := ParseDetails([]byte(got))
	if err != nil || !back.Equal(trader) {
		t.Fatalf("ParseDetails(MarshalDetails) = %v, %v", back, err)
	}
	if got := string((Set{}).MarshalDetails()); got != "[]" {
		t.Errorf("the empty set's details are %s, want []", got)
	}
	// A venue in two entries holds both entries' feeds.
	s, err := ParseDetails([]byte(`[{"type":"market_data","venue":"ASX","feeds":["quotes"]},{"type":"market_data","venue":"ASX","feeds":["depth","depth"]}]`))
	if err != nil || s.String() != "ASX:depth ASX:quotes" {
		t.Errorf("two ASX entries = %v, %v", s, err)
	}
	for _, in := range []string{
		``, `null`, `{}`, `[null]`, `[1]`, `"x"`, `[] []`,
		`[{"type":"payment_initiation","venue":"ASX","feeds":["quotes"]}]`,
		`[{"venue":"ASX","feeds":["quotes"]}]`,
		`[{"type":"market_data","venue":"ASX"}]`,
		`[{"type":"market_data","venue":"ASX","feeds":[]}]`,
		`[{"type":"market_data","venue":"asx","feeds":["quotes"]}]`,
		`[{"type":"market_data","venue":"ASX","feeds":["Quotes"]}]`,
		`[{"type":"market_data","venue":"ASX","feeds":[1]}]`,
		`[{"type":"market_data","venue":"ASX","feeds":["quotes"],"locations":["x"]}]`,
		`[{"type":"market_data","venue":"ASX","venue":"NZX","feeds":["quotes"]}]`,
		`[{"type":"market_data","Venue":"ASX","feeds":["quotes"]}]`,
		`[{"type":"market_data","venue":"A\u0053X","feeds":["quotes"],"x":1}]`,
		`[{"type":"market_data","venue":"ASX","feeds":["quotes"]}`,
		`[{"type":"market_data","venues":["ASX","NZX"],"feeds":["quotes","depth"]}]`,
	} {
		if s, err := ParseDetails([]byte(in)); !errors.Is(err, ErrDetails) {
			t.Errorf("ParseDetails(%s) = %v, %v; want ErrDetails", in, s, err)
		}
	}
}

func TestFromClaim(t *testing.T) {
	var claim any
	in := `[{"type":"market_data","venue":"NZX","feeds":["quotes"]},{"type":"other","x":1},{"type":"market_data","venue":"ASX","feeds":["depth","quotes"]}]`
	if err := json.Unmarshal([]byte(in), &claim); err != nil {
		t.Fatal(err)
	}
	s, err := FromClaim(claim)
	if err != nil || s.String() != "ASX:depth ASX:quotes NZX:quotes" {
		t.Fatalf("FromClaim = %v, %v", s, err)
	}
	if s, err := FromClaim(nil); err != nil || !s.IsEmpty() {
		t.Errorf("no claim = %v, %v; want the empty set", s, err)
	}
	for _, in := range []string{`{}`, `"ASX:quotes"`, `[1]`,
		`[{"type":"market_data","venue":"ASX","feeds":["quotes"],"extra":true}]`,
		`[{"type":"market_data","venue":"ASX","feeds":["quotes",2]}]`,
		`[{"type":"market_data","venue":"ASX","feeds":"quotes"}]`,
		`[{"type":"market_data","venue":1,"feeds":["quotes"]}]`} {
		var claim any
		if err := json.Unmarshal([]byte(in), &claim); err != nil {
			t.Fatal(err)
		}
		if s, err := FromClaim(claim); !errors.Is(err, ErrDetails) {
			t.Errorf("FromClaim(%s) = %v, %v; want ErrDetails", in, s, err)
		}
	}
}

// pairRef is the grammar of a pair written from its sentence: a venue of
// 1 to 16 upper-case letters and digits, a colon, a feed that starts with
// a lower-case letter and goes on with up to 31 lower-case letters,
// digits, underscores and hyphens.
var pairRef = regexp.MustCompile(`^[A-Z0-9]{1,16}:[a-z][a-z0-9_-]{0,31}$`)

// FuzzParsePair checks ParsePair against pairRef, and that what it
// accepts prints back as it was written.
func FuzzParsePair(f *testing.F) {
	for _, s := range []string{"ASX:quotes", "asx:quotes", "ASX:q-_9", "A:b", ":", "ASX:quotes:depth"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePair(s)
		if (err == nil) != pairRef.MatchString(s) {
			t.Fatalf("ParsePair(%q) err = %v, the reference grammar says %v", s, err, pairRef.MatchString(s))
		}
		if err == nil && p.String() != s {
			t.Fatalf("ParsePair(%q) prints back as %q", s, p.String())
		}
	})
}

// FuzzParseDetails checks that what ParseDetails accepts is a valid set
// that survives a round trip through MarshalDetails, and that every pair
// of it is named, as a venue and one of its feeds, in the input.
func FuzzParseDetails(f *testing.F) {
	f.Add(`[{"type":"market_data","venue":"ASX","feeds":["depth","quotes"]}]`)
	f.Add(`[{"type":"market_data","venue":"ASX","feeds":["quotes"]},{"type":"market_data","venue":"NZX","feeds":["quotes"]}]`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseDetails([]byte(in))
		if err != nil {
			return
		}
		back, err := ParseDetails(s.MarshalDetails())
		if err != nil || !back.Equal(s) {
			t.Fatalf("round trip of %s: %v, %v", in, back, err)
		}
		var raw []map[string]any
		if err := json.Unmarshal([]byte(in), &raw); err != nil {
			t.Fatalf("ParseDetails accepted %s, which is not an array of objects: %v", in, err)
		}
		for _, p := range s.Pairs() {
			named := false
			for _, e := range raw {
				feeds, _ := e["feeds"].([]any)
				if e["venue"] == p.Venue && slices.Contains(feeds, any(p.Feed)) {
					named = true
				}
			}
			if !named {
				t.Fatalf("ParseDetails(%s) holds %v, which no entry names", in, p)
			}
		}
	})
}

// A set is refused once its authorization_details pass MaxDetailsBytes,
// and not before. It failed when the bound was compared with the pair
// count instead of the bytes.
func TestCheckTokenSize(t *testing.T) {
	set := func(n int) Set {
		ps := make([]Pair, n)
		for i := range ps {
			ps[i] = Pair{Venue: "V" + strings.Repeat("X", 9) + string(rune('A'+i/26%26)) + string(rune('A'+i%26)), Feed: "quotes"}
		}
		return MustNew(ps...)
	}
	for _, tc := range []struct {
		n    int
		fits bool
	}{{0, true}, {3, true}, {60, true}, {70, false}, {MaxPairs, false}} {
		s := set(tc.n)
		err := s.CheckTokenSize()
		if (err == nil) != tc.fits || (err != nil && !errors.Is(err, ErrTooLarge)) {
			t.Errorf("%d pairs (%d bytes): %v", tc.n, len(s.MarshalDetails()), err)
		}
	}
}
