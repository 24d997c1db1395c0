// Package marketdata is the demo's example market-data backend: the
// service behind the gateway's message service (docs/design.md, "The demo").
//
// # DEMO-ONLY: never expose it directly
//
// The server authenticates nobody. It checks no token and trusts the
// identity headers of the upgrade request (Config.UserIDHeader, default
// X-Gatehouse-User-Id) as the gateway set them: anyone who can reach it
// can claim to be any user. It must listen on loopback only (the demo
// puts it on 127.0.0.1:9090) and be reached only through the Gatehouse
// gateway, which authenticates the client, authorizes every message, and
// sets and strips those headers. Its demo data, the accounts of the demo
// users included, is made up and public.
//
// # What it serves
//
// Server is an http.Handler: New(Config) builds it and starts its market
// simulation, ServeHTTP upgrades each request to a WebSocket (sub-protocol
// ServiceJson or ZenithJson, text frames) and Close ends everything.
// Every message is one message container (docs/protocol.md,
// "Message service"):
//
//	Zenith/ServerInfo              Publish: the server's name, class, version and protocol
//	                               Sub: confirmation, then the same data
//	Zenith/Feeds                   Sub: confirmation, then the feeds
//	Market/Markets                 Sub: confirmation, then the market states
//	Market/QueryMarkets            Publish: the market states
//	Market/Security!<code>.<venue> Sub: confirmation, a snapshot, then an update per tick
//	Market/Depth!<code>.<venue>    Sub: confirmation, a snapshot, then an update per tick
//	Trading/QueryAccounts          Publish: the accounts of the user the gateway names
//	Unsub of a subscription        stops it; confirmed (Action Unsub, Confirm true) when asked
//	anything else                  Error, echoing Controller, Topic and TransactionID
//
// # The demo markets
//
// Two venues: ASX with BHP, CBA, CSL, NAB, WBC and WES (prices in AUD),
// and NZX with AIR, FPH, SPK and MEL (in NZD). Markets, QueryMarkets and
// Feeds list both. A symbol is <code>.<venue>, the venue being the part
// after the last '.' (the ASX of BHP.ASX); the argument of a Security or
// Depth topic must be a listed symbol exactly as written here, or the Sub
// gets Error "Operation.NoResult" (an unknown venue, a symbol under
// another venue, a case variant, an empty or extra segment alike).
//
// Prices move by a pseudo-random walk seeded by Config.Seed, one trade
// per symbol every Config.TickInterval, and are written as JSON numbers
// of whole cents (45.10, never 45.1 or 45.099999).
//
// The Data of a Security message is the symbol's quote: in the snapshot
// the whole record (Code, Market, Exchange, Name, Class, Currency,
// TradingState, Open, Close and the moving fields), in each update the
// moving fields only (High, Low, Last, Trend, BestBid, BidQuantity,
// BestAsk, AskQuantity, NumberOfTrades, Volume, ValueTraded).
//
// The Data of a Depth message is the symbol's order book by price level,
// five levels a side, whole each time (an update replaces the book; it
// does not patch it):
//
//	{"Code":"AIR","Market":"NZX",
//	 "Bids":[{"Price":0.57,"Quantity":1200,"Count":1}, ...],
//	 "Asks":[{"Price":0.59,"Quantity":800,"Count":1}, ...]}
//
// Bids run from the best (highest) down, asks from the best (lowest) up;
// Count is the number of orders at the level. Code and Market are in the
// snapshot only. The best levels are the quote's BestBid and BestAsk with
// their quantities.
//
// # Counting subscriptions
//
// Server.Subscriptions counts the live Security and Depth subscriptions
// per venue and kind ("ASX/Security", "NZX/Depth", ...), exactly: a
// confirmed Sub adds one, a repeated Sub of a topic on the same
// connection none, an Unsub or the connection's end removes it. GET
// /stats (StatsPath) answers the same as JSON, with the connections, to
// loopback peers only (403 to others):
//
//	{"connections":2,"subscriptions":{"ASX/Depth":0,"ASX/Security":3,"NZX/Depth":1,"NZX/Security":0}}
//
// # Robustness
//
// Each connection has one reader (the ServeHTTP goroutine) and one writer
// goroutine. Outgoing messages wait in a bounded queue; a client that
// falls behind it, or blocks a write past Config.WriteTimeout, is closed
// (1008) rather than buffered. Messages are limited to Config.ReadLimit
// (1009 beyond), text only (1003 for binary, 1007 for invalid UTF-8); a
// malformed message gets an Error with Data "Data.Deserialise" and the
// connection stays open. The server pings every Config.PingInterval and
// closes (1008) a connection silent for Config.IdleTimeout. Connections
// are bounded by Config.MaxConnections (HTTP 503 beyond). Close closes
// every connection with 1001 and returns when every goroutine has ended.
//
// # Dependencies
//
// The package imports gorilla/websocket and zap, and must not import
// Caddy: a demo-only Caddy module mounts it (wrapping a ServeHTTP,
// calling Close on Cleanup). ServeHTTP hijacks through
// http.NewResponseController when the ResponseWriter does not implement
// http.Hijacker itself, as Caddy's does not.
package marketdata
