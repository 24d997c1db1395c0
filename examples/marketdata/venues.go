package marketdata

// The demo's venues and their symbols. A venue is a market code as the
// topics spell it: the part of a symbol after its last '.' (the ASX of
// BHP.ASX). The lists are in the order the markets are listed and the
// walk steps the symbols.

// venue is a demo market.
type venue struct {
	code, currency string
}

var demoVenues = []venue{
	{"ASX", "AUD"},
	{"NZX", "NZD"},
}

// demoSecurities are the symbols of the demo, by venue, and their
// starting prices (the previous close), in cents. Prices move by whole
// cents, and stay positive: the walk keeps them within 20% of the close.
var demoSecurities = []struct {
	code, venue, name string
	close             Price
}{
	{"BHP", "ASX", "BHP Group Limited", 4512},
	{"CBA", "ASX", "Commonwealth Bank of Australia", 15230},
	{"CSL", "ASX", "CSL Limited", 28540},
	{"NAB", "ASX", "National Australia Bank Limited", 3785},
	{"WBC", "ASX", "Westpac Banking Corporation", 3120},
	{"WES", "ASX", "Wesfarmers Limited", 7215},
	{"AIR", "NZX", "Air New Zealand Limited", 58},
	{"FPH", "NZX", "Fisher & Paykel Healthcare Corporation Limited", 3545},
	{"SPK", "NZX", "Spark New Zealand Limited", 262},
	{"MEL", "NZX", "Meridian Energy Limited", 561},
}

// currencyOf is the currency of a venue's prices.
func currencyOf(code string) string {
	for _, v := range demoVenues {
		if v.code == code {
			return v.currency
		}
	}
	return ""
}
