// Package store defines what the identity server keeps between requests and
// across restarts: signing keys, server secrets, users, refresh-token families,
// access-token revocations, failure counters, the audit's keys and
// checkpoints (Store), and the browser flows' login sessions, authorization
// codes and consents (BrowserStore, a separate interface a backend may
// implement), and the device flow's authorizations (DeviceStore, separate in
// the same way).
//
// A backend implements Store; every backend runs the conformance suite in
// package storetest. Operations where a race matters are single atomic
// operations here (a refresh-token rotation is a compare-and-swap), never a
// read followed by a write in the caller. A backend that several instances
// share may also offer what shared.go defines: revocation notices
// (RevocationNotifier) and a record of its outages (Outages).
//
// It imports nothing from identity, and must not depend on Caddy, on
// net/http, or on any backend.
package store
