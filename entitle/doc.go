// Package entitle is the vocabulary of market-data entitlements: a
// (venue, feed) pair, a set of them, their text form ("ASX:quotes") and
// their form in an access token, an RFC 9396 authorization_details entry
// of type "market_data" (docs/entitlements.md).
//
// An exchange licenses its data per user, per venue and per kind of feed;
// an entitlement says one user may see one feed of one venue. A venue is a
// market code as the backend spells it (the ASX of "BHP.ASX"); a feed is a
// kind of data ("quotes", "depth", a news source's "news").
//
// The package is a pure leaf: the identity server stores and issues sets,
// the message gateway and the query service check them, and it imports
// nothing of theirs.
package entitle
