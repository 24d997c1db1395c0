package postgres_test

import (
	"testing"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/postgres"
	"github.com/gatehouse/gatehouse/identity/store/postgres/pgtest"
	"github.com/gatehouse/gatehouse/identity/store/storetest"
)

// open opens a store on the database dsn names for the test t and closes
// it when t ends.
func open(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(storetest.Context(t), postgres.Config{DSN: dsn})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// The conformance suite runs its cases of legacy families only on a
// store.LegacySeeder: this keeps them from being skipped unnoticed.
var _ store.LegacySeeder = (*postgres.Store)(nil)

// TestConformance runs the whole suite, each of its cases on a database of
// its own.
func TestConformance(t *testing.T) {
	pgtest.ServerDSN(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, pgtest.FreshDatabase(t))
	})
}

// TestBrowserConformance runs the browser roles' suite, each of its cases
// on a database of its own.
func TestBrowserConformance(t *testing.T) {
	pgtest.ServerDSN(t)
	storetest.RunBrowser(t, func(t *testing.T) store.BrowserStore {
		return open(t, pgtest.FreshDatabase(t))
	})
}

// TestTwoStoresConsumeCode: two Stores on one database using one code at
// once, as two gatehouse instances would: exactly one use wins.
func TestTwoStoresConsumeCode(t *testing.T) {
	dsn := pgtest.FreshDatabase(t)
	storetest.ConsumeConcurrently(t, 16, open(t, dsn), open(t, dsn))
}

// TestTwoStoresRotate: two Stores on one database, as two gatehouse
// instances have, rotating the same refresh token at once: exactly one
// winner, whichever instance it is on, and both read the winner's family.
func TestTwoStoresRotate(t *testing.T) {
	dsn := pgtest.FreshDatabase(t)
	storetest.RotateConcurrently(t, open(t, dsn), open(t, dsn))
}

// TestTwoStoresAdmit: two Stores on one database counting attempts against
// one key at once lose no increment, and admit no more than the limit.
func TestTwoStoresAdmit(t *testing.T) {
	dsn := pgtest.FreshDatabase(t)
	storetest.AdmitConcurrently(t, open(t, dsn), open(t, dsn))
}
