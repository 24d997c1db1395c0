package policy

import (
	"testing"

	"github.com/gatehouse/gatehouse/entitle"
)

// BenchmarkVenueCheck: the work the entitlement check adds to one client
// message, for each kind of row, against a session holding 40 pairs.
func BenchmarkVenueCheck(b *testing.B) {
	v := demoVenues(b)
	var pairs []string
	for _, venue := range []string{"ASX", "NZX", "CXA", "SGX", "HKEX", "TSE", "LSE", "XETR", "NYSE", "NSDQ", "TSX", "JSE", "B3", "BME", "SIX", "OSE", "KRX", "TWSE", "BSE", "NSE"} {
		pairs = append(pairs, venue+":quotes", venue+":depth")
	}
	ent := entitle.MustParse(pairs...)
	for _, c := range []struct{ name, controller, topic, data string }{
		{"argument", "Market", "Security!BHP.ASX", ""},
		{"data", "Market", "QuerySecurity", `{"Code":"BHP","Market":"ASX"}`},
		{"venues", "Market", "QuerySymbols", `{"SearchText":"B","Markets":["ASX","NZX"]}`},
		{"none", "Trading", "PlaceOrder", ""},
	} {
		var data []byte
		if c.data != "" {
			data = []byte(c.data)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if ok, _ := v.Check(ent, c.controller, c.topic, data); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}
