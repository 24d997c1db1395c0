package policy

import (
	"slices"
	"testing"
)

// TestVenueOf: what a message is of, as the audit records a subscription
// (its venues and feed), read by the default table. It failed when Of
// gave the rule's feed without the venue of a symbol argument, and when
// an empty filter named no venue instead of the backend's.
func TestVenueOf(t *testing.T) {
	v := demoVenues(t)
	tests := []struct {
		controller, topic, data string
		venues                  []string
		feed                    string
	}{
		{"Market", "Security!BHP.ASX", "", []string{"ASX"}, "quotes"},
		{"Market", "Depth!AIR.NZX", "", []string{"NZX"}, "depth"},
		{"Market", "QuerySecurity", `{"Market":"NZX","Code":"AIR"}`, []string{"NZX"}, "quotes"},
		{"Market", "QuerySymbols", `{"Markets":["ASX","NZX"]}`, []string{"ASX", "NZX"}, "quotes"},
		{"Market", "QuerySymbols", `{"Markets":[]}`, []string{"ASX", "NZX"}, "quotes"},
		{"Market", "QuerySymbols", `{"SearchText":"B"}`, []string{"ASX", "NZX"}, "quotes"},
		{"Market", "Search", "", []string{"ASX", "NZX"}, "quotes"},
		{"News", "News!ASX", "", []string{"ASX"}, "news"},
		{"Market", "Markets", "", nil, ""},
		{"Trading", "PlaceOrder", `{"Market":"NZX"}`, nil, ""},
		// Unreadable: the feed, no venue.
		{"Market", "Security!bhp.asx", "", nil, "quotes"},
		{"Market", "Security", "", nil, "quotes"},
		{"Market", "QuerySecurity", `{"market":"ASX"}`, nil, "quotes"},
		{"Market", "QuerySecurity", `{"Market":"A\u0053X"}`, nil, "quotes"},
		{"Market", "QuerySymbols", `{"Markets":"ASX"}`, nil, "quotes"},
	}
	for _, tt := range tests {
		t.Run(tt.controller+"/"+tt.topic+tt.data, func(t *testing.T) {
			venues, feed := v.Of(tt.controller, tt.topic, []byte(tt.data))
			if !slices.Equal(venues, tt.venues) || feed != tt.feed {
				t.Errorf("Of = %v %q, want %v %q", venues, feed, tt.venues, tt.feed)
			}
		})
	}
}
