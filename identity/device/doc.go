// Package device is the device authorization grant's browser-facing half
// (RFC 8628): the device authorization endpoint, which gives a client a
// device code to poll with and a short user code, and the verification
// page, where a logged-in user types the user code, sees which client asks
// for which scopes, and approves or denies. The token endpoint's half (the
// polling) is tokens.Service.ExchangeDeviceCode.
//
// Device codes are stored as their SHA-256, user codes as an HMAC under a
// server secret (a user code has ~34 bits: a plain hash of it would fall to
// a search). User-code entry is rate-limited through the store's counters
// (shared by every instance, counted before the lookup, so parallel guesses
// get no more than sequential ones): per source address, per session and
// globally. Every form is CSRF-protected (session.Guard).
//
// It imports the domain packages (clients, tokens, users, store), the
// session and web packages and the oauth vocabulary; no other endpoint
// package.
package device
