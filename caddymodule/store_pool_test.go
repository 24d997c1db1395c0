package caddymodule

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

// openerFunc is a StoreOpener of a function.
type openerFunc func(ctx context.Context) (store.Store, error)

func (openerFunc) StoreKey() string                                     { return "test" }
func (f openerFunc) OpenStore(ctx context.Context) (store.Store, error) { return f(ctx) }

// TestPoolPassesInnerStore: the pool hands out the backend's own store, not
// its wrapper, so that identity.NewServer finds the browser roles
// (store.BrowserStore) by a type assertion.
func TestPoolPassesInnerStore(t *testing.T) {
	key := "test-pool:" + t.Name()
	st, err := acquireStore(context.Background(), key, openerFunc(func(ctx context.Context) (store.Store, error) {
		return sqlite.Open(ctx, filepath.Join(t.TempDir(), "gatehouse.db"))
	}))
	if err != nil {
		t.Fatalf("acquireStore: %v", err)
	}
	defer func() {
		if err := releaseStore(key); err != nil {
			t.Errorf("releaseStore: %v", err)
		}
	}()
	if _, ok := st.(store.BrowserStore); !ok {
		t.Errorf("pooled store %T is not a store.BrowserStore", st)
	}
}
