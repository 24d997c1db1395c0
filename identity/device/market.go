package device

import (
	"strings"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/web"
)

// market fills the page's market data: what the device asked for (its
// authorization_details, kept with the code), each pair marked when the
// user does not hold it, and those pairs named. A device that asked for
// none in particular shows nothing: it gets the user's pairs. The page
// only tells: the token request checks the pairs against the user's set
// in force then (tokens.Service.ExchangeDeviceCode).
func market(d *web.Device, rec store.DeviceCode, held entitle.Set) {
	if rec.AskedEntitlements == nil {
		return
	}
	d.MarketAsked = true
	var missing []string
	for _, p := range rec.AskedEntitlements.Pairs() {
		notHeld := !held.Has(p.Venue, p.Feed)
		d.Market = append(d.Market, web.MarketData{Venue: p.Venue, Feed: p.Feed, NotHeld: notHeld})
		if notHeld {
			missing = append(missing, p.String())
		}
	}
	d.NotHeld = strings.Join(missing, ", ")
}
