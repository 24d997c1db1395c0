package policy

import (
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/entitle"
)

var (
	viewer = entitle.Set{}
	demo   = entitle.MustParse("ASX:quotes")
	trader = entitle.MustParse("ASX:quotes ASX:depth NZX:quotes")
	whole  = entitle.MustParse("ASX:quotes ASX:depth NZX:quotes NZX:depth ASX:news")
)

func demoVenues(t testing.TB) *Venues {
	v, err := NewVenues(VenueConfig{Venues: map[string][]string{"quotes": {"ASX", "NZX"}, "depth": {"ASX", "NZX"}, "news": {"ASX"}}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVenueCheck is the default table against the demo's users: viewer
// holds nothing, demo ASX quotes, trader ASX quotes and depth and NZX
// quotes, whole every pair.
func TestVenueCheck(t *testing.T) {
	v := demoVenues(t)
	type who struct{ viewer, demo, trader, whole bool }
	tests := []struct {
		controller, topic, data string
		want                    who
	}{
		{"Market", "Security!BHP.ASX", "", who{false, true, true, true}},
		{"Market", "Security!AIR.NZX", "", who{false, false, true, true}},
		{"Market", "Trades!BHP.ASX", "", who{false, true, true, true}},
		{"Market", "Depth!BHP.ASX", "", who{false, false, true, true}},
		{"Market", "Depth!AIR.NZX", "", who{false, false, false, true}},
		{"Market", "DepthLevels!AIR.NZX", "", who{false, false, false, true}},
		{"Market", "QuerySecurity", `{"Market":"NZX","Code":"AIR"}`, who{false, false, true, true}},
		{"Market", "QueryDepth", `{"Code":"BHP","Market":"ASX"}`, who{false, false, true, true}},
		{"Market", "QuerySymbols", `{"Markets":["ASX"],"SearchText":"B"}`, who{false, true, true, true}},
		{"Market", "QuerySymbols", `{"Markets":["ASX","NZX"]}`, who{false, false, true, true}},
		{"Market", "QuerySymbols", `{"SearchText":"B"}`, who{false, false, true, true}},
		{"Market", "QuerySymbols", `{"Markets":[]}`, who{false, false, true, true}},
		{"Market", "Markets", "", who{true, true, true, true}},
		{"Market", "QueryMarkets", "", who{true, true, true, true}},
		{"Market", "Search", "", who{false, false, true, true}},
		{"Market", "SomethingNew", "", who{false, false, true, true}},
		{"Fragments", "Fragments!BHP.ASX", "", who{false, false, true, true}},
		{"Watchlist", "Watchlists", "", who{true, true, true, true}},
		{"Watchlist", "Watchlist!w1", "", who{false, false, true, true}},
		{"News", "News!ASX", "", who{false, false, false, true}},
		{"News", "Sources", "", who{true, true, true, true}},
		{"Trading", "PlaceOrder", `{"Market":"NZX"}`, who{true, true, true, true}},
		{"Auth", "AuthToken", "", who{true, true, true, true}},
		{"Zenith", "ServerInfo", "", who{true, true, true, true}},
		// What the grammar refuses is refused to everyone.
		{"Market", "Security!bhp.asx", "", who{}},
		{"Market", "Security!BHP.asx", "", who{}},
		{"Market", "Security!bhp.ASX", "", who{}},
		{"Market", "Security!BHP.ＡSX", "", who{}},
		{"Market", "Security!.ASX", "", who{}},
		{"Market", "Security!BHP.", "", who{}},
		{"Market", "Security!BHP.ASX!NZX", "", who{}},
		{"Market", "Security!BHP.ASX.NZX", "", who{}},
		{"Market", "Security!BHP..ASX", "", who{}},
		{"Market", "Security!BHP ASX", "", who{}},
		{"Market", "Security!BHP.ASX ", "", who{}},
		{"Market", "Security!ASX", "", who{}},
		{"Market", "Security!", "", who{}},
		{"Market", "Security", "", who{}},
		{"Market", "QuerySecurity", `{"market":"ASX"}`, who{}},
		{"Market", "QuerySecurity", `{"Market":"ASX","MARKET":"NZX"}`, who{}},
		{"Market", "QuerySecurity", `{"Market":"ASX","Market":"NZX"}`, who{}},
		{"Market", "QuerySecurity", `{"Market":"ASX","Mar_ket":"NZX"}`, who{}},
		{"Market", "QuerySecurity", `{"Mark\u0065t":"ASX"}`, who{}},
		{"Market", "QuerySecurity", `{"Market":"A\u0053X"}`, who{}},
		{"Market", "QuerySecurity", `{"Market":["ASX"]}`, who{}},
		{"Market", "QuerySecurity", `["ASX"]`, who{}},
		{"Market", "QuerySecurity", ``, who{}},
		{"Market", "QuerySymbols", `{"Markets":"ASX"}`, who{}},
		{"Market", "QuerySymbols", `{"Markets":["ASX","nzx"]}`, who{}},
		{"Market", "QuerySymbols", `{"Markets":["ASX,NZX"]}`, who{}},
		{"Market", "QuerySymbols", `{"markets":["ASX"]}`, who{}},
	}
	for _, tt := range tests {
		var data []byte
		if tt.data != "" {
			data = []byte(tt.data)
		}
		for _, s := range []struct {
			name string
			ent  entitle.Set
			want bool
		}{{"viewer", viewer, tt.want.viewer}, {"demo", demo, tt.want.demo}, {"trader", trader, tt.want.trader}, {"whole", whole, tt.want.whole}} {
			got, reason := v.Check(s.ent, tt.controller, tt.topic, data)
			if got != s.want {
				t.Errorf("%s/%s %s for %s: %v (%s), want %v", tt.controller, tt.topic, tt.data, s.name, got, reason, s.want)
			}
			if got == (reason != "") {
				t.Errorf("%s/%s for %s: ok %v with reason %q", tt.controller, tt.topic, s.name, got, reason)
			}
		}
	}
}

func TestVenueConfig(t *testing.T) {
	bad := []VenueConfig{
		{Rules: []VenueRule{{Controller: "Market", Topic: "Quote", In: "argument"}}},                   // no feed
		{Rules: []VenueRule{{Controller: "Market", Topic: "Quote", In: "argument", Feed: "Quotes"}}},   // feed case
		{Rules: []VenueRule{{Controller: "Market", Topic: "Quote!x", In: "argument", Feed: "quotes"}}}, // "!"
		{Rules: []VenueRule{{Controller: "Market", Topic: "Quote", In: "data", Feed: "quotes"}}},       // no member
		{Rules: []VenueRule{{Controller: "Market", Topic: "Quote", In: "argument", Form: "venues", Feed: "quotes"}}},
		{Rules: []VenueRule{{Controller: "Market", Topic: "Quote", In: "none", Feed: "quotes"}}},
		{Rules: []VenueRule{{Controller: "Market", Topic: "Quote", In: "somewhere", Feed: "quotes"}}},
		{Rules: []VenueRule{{Controller: "Market", Topic: "Quote", In: "every", Feed: "quotes"}, {Controller: "Market", Topic: "Quote", In: "none"}}},
		{Venues: map[string][]string{"quotes": {"asx"}}},
		{Venues: map[string][]string{"Quotes": {"ASX"}}},
	}
	for i, c := range bad {
		if _, err := NewVenues(c); err == nil {
			t.Errorf("config %d was accepted: %+v", i, c)
		}
	}
	// A config's row replaces the default's; a new row adds a feed.
	v, err := NewVenues(VenueConfig{
		Rules:  []VenueRule{{Controller: "Market", Topic: "Depth", In: "argument", Feed: "level2"}, {Controller: "Market", Topic: "Quote", In: "data", Member: "Symbol", Form: "symbol", Feed: "quotes"}},
		Venues: map[string][]string{"quotes": {"ASX"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	l2 := entitle.MustParse("ASX:level2")
	if ok, _ := v.Check(l2, "Market", "Depth!BHP.ASX", nil); !ok {
		t.Error("the configured feed of Depth is not level2")
	}
	if ok, _ := v.Check(trader, "Market", "Depth!BHP.ASX", nil); ok {
		t.Error("the default row of Depth still applies")
	}
	if ok, _ := v.Check(demo, "Market", "Quote", []byte(`{"Symbol":"BHP.ASX"}`)); !ok {
		t.Error("a symbol in Data is not read")
	}
	if ok, _ := v.Check(demo, "Market", "Search", nil); !ok {
		t.Error(`demo holds quotes of every venue of the config's list (ASX): "every" refused it`)
	}
	// Without the defaults, an unlisted topic needs every venue's quotes,
	// and a feed without a list lets no one through.
	v, err = NewVenues(VenueConfig{ReplaceDefaults: true, Rules: []VenueRule{{Controller: "Market", Topic: "Depth", In: "every", Feed: "depth"}}})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := v.Check(whole, "Market", "Markets", nil); ok {
		t.Error("ReplaceDefaults: Markets passed with no venue list")
	}
	if ok, _ := v.Check(whole, "Market", "Depth!BHP.ASX", nil); ok {
		t.Error("an every rule passed with no venue list for its feed")
	}
}

// symbolRef is the grammar of a symbol argument written from its
// sentence, not from the parser: a code (1 to 32 of A-Z and 0-9), a dot, a
// venue as the backend spells it (1 to 16 of A-Z and 0-9), nothing else.
func symbolRef(s string) (venue string, ok bool) {
	dot := strings.IndexByte(s, '.')
	if dot < 1 || dot > 32 {
		return "", false
	}
	for i, c := range []byte(s) {
		if i == dot {
			continue
		}
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return "", false
		}
	}
	v := s[dot+1:]
	if len(v) < 1 || len(v) > 16 {
		return "", false
	}
	return v, true
}

// FuzzVenueArgument checks the per-symbol topics against symbolRef: a
// Security (quotes) or Depth (depth) subscription is allowed exactly when
// the reference reads a venue from its argument and the session holds
// that venue's feed; the grammar's refusals are refusals whatever is held.
func FuzzVenueArgument(f *testing.F) {
	v := demoVenues(f)
	for _, s := range []string{"BHP.ASX", "AIR.NZX", "bhp.asx", "BHP.ASX!X", "BHP..ASX", ".ASX", "BHP.", "ＢHP.ASX", "BHP.AS\u0130", "B.H.ASX", "BHP.ASX\x00"} {
		f.Add(s, uint8(0xff))
		f.Add(s, uint8(1))
	}
	pairs := entitle.MustParse("ASX:quotes ASX:depth NZX:quotes NZX:depth AS:quotes ASXX:quotes X:depth A1:quotes").Pairs()
	f.Fuzz(func(t *testing.T, arg string, mask uint8) {
		var held []entitle.Pair
		for i, p := range pairs {
			if mask&(1<<i) != 0 {
				held = append(held, p)
			}
		}
		ent := entitle.MustNew(held...)
		venue, readable := symbolRef(arg)
		for _, feed := range []struct{ topic, feed string }{{"Security", "quotes"}, {"Depth", "depth"}} {
			got, reason := v.Check(ent, "Market", feed.topic+"!"+arg, nil)
			want := readable && ent.Has(venue, feed.feed)
			if got != want {
				t.Fatalf("%s!%q held %v: %v (%s); the reference reads venue %q (readable %v): want %v",
					feed.topic, arg, ent, got, reason, venue, readable, want)
			}
		}
	})
}
