package policy

// DefaultVenueRules is the default venue table (a fresh copy each call),
// docs/entitlements.md "On the socket" gives it with the reasons:
//   - per-symbol topics name their venue in the argument: Security and
//     Trades are the feed quotes, Depth and DepthLevels the feed depth;
//     their one-off queries name it in Data's Market member;
//   - QuerySymbols filters by Data's Markets list, checked venue by venue
//     (without one, every venue);
//   - the other Market topics, and Fragments, Watchlist and the scan
//     results of Notify, span venues: only to sessions holding every venue
//     of quotes;
//   - News!SOURCE names its source, the venue of the feed news;
//   - what carries no market data is not checked: the market and broker
//     lists, scan definitions, Trading, Auth, Channel, Zenith.
func DefaultVenueRules() []VenueRule {
	var rs []VenueRule
	add := func(controller, in, form, member, feed string, topics ...string) {
		for _, t := range topics {
			rs = append(rs, VenueRule{Controller: controller, Topic: t, In: in, Form: form, Member: member, Feed: feed})
		}
	}
	none := func(controller string, topics ...string) { add(controller, VenueNone, "", "", "", topics...) }
	none(Any, Any)
	none(Any, "Configure", "QueryConfigure")
	none("Market", "Markets", "QueryMarkets", "QueryBrokers", "QueryTickTables", "QueryTradingStates", "QueryMixedMarket")
	add("Market", VenueInArgument, FormSymbol, "", "quotes", "Security", "Trades")
	add("Market", VenueInArgument, FormSymbol, "", "depth", "Depth", "DepthLevels")
	add("Market", VenueInData, FormVenue, "Market", "quotes", "QuerySecurity", "QueryTrades")
	add("Market", VenueInData, FormVenue, "Market", "depth", "QueryDepth", "QueryDepthLevels")
	add("Market", VenueInData, FormVenues, "Markets", "quotes", "QuerySymbols")
	add("Market", VenueEvery, "", "", "quotes", Any)
	add("Fragments", VenueEvery, "", "", "quotes", Any)
	none("Watchlist", "Watchlists")
	add("Watchlist", VenueEvery, "", "", "quotes", Any)
	add("Notify", VenueEvery, "", "", "quotes", "ExecuteScan", "Matches", "QueryMatches", "UpdateScanStatus")
	none("News", "Sources", "QuerySources")
	add("News", VenueInArgument, FormVenue, "", "news", "News")
	add("News", VenueEvery, "", "", "news", Any)
	return rs
}
