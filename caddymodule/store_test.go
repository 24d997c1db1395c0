package caddymodule

import (
	"context"
	"errors"
	"testing"

	"github.com/gatehouse/gatehouse/identity/store"
)

// fakeStore counts how often it is closed; its other methods are not used.
type fakeStore struct {
	store.Store
	closed int
}

func (s *fakeStore) Close() error { s.closed++; return nil }

// fakeOpener opens a fakeStore, or fails with err.
type fakeOpener struct {
	key   string
	opens int
	last  *fakeStore
	err   error
}

func (o *fakeOpener) StoreKey() string { return o.key }

func (o *fakeOpener) OpenStore(context.Context) (store.Store, error) {
	if o.err != nil {
		return nil, o.err
	}
	o.opens++
	o.last = &fakeStore{}
	return o.last, nil
}

func TestStorePoolSharesAndCloses(t *testing.T) {
	ctx := context.Background()
	o := &fakeOpener{key: "fake:" + t.Name()}
	a, err := acquireStore(ctx, o.key, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := acquireStore(ctx, o.key, o) // as a reloaded config does
	if err != nil {
		t.Fatal(err)
	}
	if a != b || o.opens != 1 {
		t.Fatalf("second acquire opened another store (opens %d)", o.opens)
	}
	if refs, _ := stores.References(o.key); refs != 2 {
		t.Errorf("references %d, want 2", refs)
	}
	if err := releaseStore(o.key); err != nil { // the old config's Cleanup
		t.Fatal(err)
	}
	if o.last.closed != 0 {
		t.Fatal("store closed while the new config holds it")
	}
	if err := releaseStore(o.key); err != nil {
		t.Fatal(err)
	}
	if o.last.closed != 1 {
		t.Errorf("store closed %d times after the last release, want 1", o.last.closed)
	}
	if _, ok := stores.References(o.key); ok {
		t.Error("pool still holds the store after the last release")
	}
}

func TestStorePoolOpenError(t *testing.T) {
	boom := errors.New("boom")
	o := &fakeOpener{key: "fake:" + t.Name(), err: boom}
	if _, err := acquireStore(context.Background(), o.key, o); !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if _, ok := stores.References(o.key); ok {
		t.Error("pool holds an entry for a store that failed to open")
	}
}

func TestAppCleanupHalfProvisioned(t *testing.T) {
	o := &fakeOpener{key: "fake:" + t.Name()}
	st, err := acquireStore(context.Background(), o.key, o)
	if err != nil {
		t.Fatal(err)
	}
	a := &App{storeKey: o.key, store: st} // Provision failed after opening the store
	if err := a.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if err := a.Cleanup(); err != nil { // a second Cleanup is harmless
		t.Fatal(err)
	}
	if o.last.closed != 1 {
		t.Errorf("store closed %d times, want 1", o.last.closed)
	}
	if err := new(App).Cleanup(); err != nil {
		t.Errorf("cleanup of an unprovisioned app: %v", err)
	}
}
