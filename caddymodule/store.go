package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/identity/store"
)

// StoreOpener is implemented by the modules of the gatehouse.stores
// namespace: each names and opens one store backend.
type StoreOpener interface {
	// StoreKey identifies the database the module opens, e.g.
	// "sqlite:/abs/path.db". Configurations whose store modules have the
	// same key share one open store.
	StoreKey() string
	// OpenStore opens the store. The caller closes it.
	OpenStore(ctx context.Context) (store.Store, error)
}

// StoreStatus is what `validate` reads of a store without changing it.
type StoreStatus struct {
	// Absent: no database, or no schema in it yet (a start creates it).
	Absent bool
	// Current is the schema version the database is at; Latest the one a
	// start brings it to (the migrations between are pending).
	Current, Latest int
}

// StoreStatuser is a StoreOpener that can read its store's StoreStatus without
// changing anything: no file, no migration, no row.
type StoreStatuser interface {
	StoreStatus(ctx context.Context) (StoreStatus, error)
}

// defaultStore is the store of an app that names none: the sqlite module
// (package caddymodule/sqlitestore) at its default path. It is raw JSON so
// that this package does not import the module's.
var defaultStore = json.RawMessage(`{"backend":"sqlite"}`)

// stores holds the open stores by key, reference-counted: on a reload Caddy
// provisions the new configuration before it cleans up the old one, so both
// hold the same store and it stays open across the reload.
var stores = caddy.NewUsagePool()

// pooledStore is a store held in the pool; the pool closes it when the last
// user releases it.
type pooledStore struct{ store.Store }

// Destruct closes the store.
func (p pooledStore) Destruct() error { return p.Close() }

// acquireStore returns the open store with this key, opening it with opener
// when no configuration holds it yet. Each acquireStore is matched by one
// releaseStore.
func acquireStore(ctx context.Context, key string, opener StoreOpener) (store.Store, error) {
	v, _, err := stores.LoadOrNew(key, func() (caddy.Destructor, error) {
		st, err := opener.OpenStore(ctx)
		if err != nil {
			return nil, err
		}
		return pooledStore{st}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", key, err)
	}
	return v.(pooledStore).Store, nil
}

// releaseStore gives back a store taken with acquireStore; the last release
// closes it.
func releaseStore(key string) error {
	if _, err := stores.Delete(key); err != nil {
		return fmt.Errorf("closing store %s: %w", key, err)
	}
	return nil
}

// acquireConfiguredStore acquires the configured store from the pool.
func (a *App) acquireConfiguredStore(ctx caddy.Context) error {
	opener, err := a.loadStoreModule(ctx)
	if err != nil {
		return err
	}
	key := opener.StoreKey()
	st, err := acquireStore(ctx, key, opener)
	if err != nil {
		return err
	}
	a.storeKey, a.store = key, st
	return nil
}

// loadStoreModule loads the store module, the default one when none is
// configured.
func (a *App) loadStoreModule(ctx caddy.Context) (StoreOpener, error) {
	if a.StoreRaw == nil {
		a.StoreRaw = defaultStore
	}
	mod, err := ctx.LoadModule(a, "StoreRaw")
	if err != nil {
		return nil, fmt.Errorf("loading store module: %w", err)
	}
	opener, ok := mod.(StoreOpener)
	if !ok {
		return nil, fmt.Errorf("store module %T does not open a store", mod)
	}
	return opener, nil
}

// OpenStore opens the app's store outside the pool, for a command-line tool
// that holds it alone while servers may hold the same store in theirs. The
// caller closes it.
func (a *App) OpenStore(ctx context.Context) (store.Store, error) {
	cctx, cancel := caddy.NewContext(caddy.Context{Context: ctx})
	defer cancel()
	opener, err := a.loadStoreModule(cctx)
	if err != nil {
		return nil, err
	}
	st, err := opener.OpenStore(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", opener.StoreKey(), err)
	}
	return st, nil
}

// Interface guards
var _ caddy.Destructor = pooledStore{}
