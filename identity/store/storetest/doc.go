// Package storetest is the conformance suite of store.Store: every backend's
// test calls Run with a function that opens a new, empty store, as Dex's
// storage/conformance does:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := sqlite.Open(storetest.Context(t), filepath.Join(t.TempDir(), "gatehouse.db"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite covers every method and its errors, the time precision a store
// promises, the constant storage of a refresh family, and the races the
// identity server relies on the store to settle: concurrent rotations of
// one refresh family from one generation, and conversions of one legacy
// token (exactly one wins), revocation racing rotation, concurrent
// failures counted against one key (none lost), and many concurrent
// writers. RotateConcurrently and AdmitConcurrently also run their races
// over several stores sharing one database. The cases of legacy families
// (made before the constant scheme) run only on a store that implements
// store.LegacySeeder, and skip otherwise.
//
// RunBrowser is the suite of store.BrowserStore (sessions, authorization
// codes, consents), for a backend that implements it; its race is a code
// used by many requests at once (exactly one wins), which
// ConsumeConcurrently also runs over several stores sharing one database.
//
// Every wait is bounded by Timeout. The package is imported only by tests; it
// imports package store only, from identity, and must not depend on any
// backend.
package storetest
