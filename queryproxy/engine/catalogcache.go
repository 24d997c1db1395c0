package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// CatalogCache is the catalog an SQL engine read last, and the version of the schema it
// read it at (V: SQLite's schema_version, a digest of PostgreSQL's catalog), for
// Engine.Catalog: the catalog is served from memory, the version is checked at most once
// per Interval (or at the next call after MarkStale), and the catalog is read again only
// when the version changed. One goroutine checks at a time; the others go on with the
// catalog read last meanwhile. A check that fails leaves the catalog read last in service,
// and the next call checks again.
//
// An engine sets the fields once, when it opens, and its Catalog is the cache's; the cache
// is then safe for concurrent use.
type CatalogCache[V comparable] struct {
	// Interval is how long a catalog is served before a call checks the version again.
	Interval time.Duration
	// Now is the cache's clock.
	Now func() time.Time
	// Timeout is the time limit of one check: the engine's statement time limit.
	Timeout time.Duration
	// Read checks the version, under the check's time limit.
	Read CatalogRead[V]
	// Classify wraps the error of a check that ran under limited, derived from parent
	// (the caller's context), with the error of this package that describes it
	// (ErrTimeout, ErrUnavailable, ...), as the engine's statements' errors are.
	Classify func(parent, limited context.Context, err error) error
	// Closed holds true once the engine is closed: a check that is due then fails with
	// ErrUnavailable and ErrClosed, the engine's own error.
	Closed    *atomic.Bool
	ErrClosed error
	// Log is told of each check that read a catalog anew (next, at a version not seen
	// before; err nil) and of each that failed while the catalog read last stays in
	// service (next nil), for the engine's log.
	Log func(next *CatalogSnapshot[V], err error)

	cur     atomic.Pointer[CatalogSnapshot[V]]
	refresh sync.Mutex  // held by the one goroutine that checks the version
	stale   atomic.Bool // the schema changed under a statement: check at the next call
}

// CatalogSnapshot is a catalog as an engine read it.
type CatalogSnapshot[V comparable] struct {
	Catalog sqlgen.Catalog
	Version V         // the schema's version when the catalog was read
	Checked time.Time // when the version was last checked
}

// CatalogRead reads the schema's version and, when it is not prev's (prev nil: no catalog
// was read yet), the catalog; when the version is prev's, it returns prev's catalog with
// the new check time.
type CatalogRead[V comparable] func(ctx context.Context, prev *CatalogSnapshot[V]) (*CatalogSnapshot[V], error)

// Catalog returns the catalog read last while it is fresh (checked less than Interval
// ago, and not marked stale since). Otherwise it is checked (Read, under Timeout) unless
// another goroutine is checking, which returns the catalog read last meanwhile. When the
// check fails, the catalog read last is returned, and the next call checks again; when
// there is none, the check's error, classified, as "reading catalog: ...".
func (c *CatalogCache[V]) Catalog(ctx context.Context) (sqlgen.Catalog, error) {
	if s := c.cur.Load(); s != nil && c.fresh(s) {
		return s.Catalog, nil
	}
	if c.Closed.Load() {
		return sqlgen.Catalog{}, fmt.Errorf("reading catalog: %w: %w", ErrUnavailable, c.ErrClosed)
	}
	s := c.cur.Load()
	if s != nil {
		// One goroutine checks; the others keep using the catalog they have meanwhile.
		if !c.refresh.TryLock() {
			return s.Catalog, nil
		}
	} else {
		c.refresh.Lock()
	}
	defer c.refresh.Unlock()
	// Another goroutine may have checked since s was loaded.
	s = c.cur.Load()
	if s != nil && c.fresh(s) {
		return s.Catalog, nil
	}
	next, err := c.check(ctx, s)
	if err != nil {
		if s == nil {
			return sqlgen.Catalog{}, fmt.Errorf("reading catalog: %w", err)
		}
		// The schema rarely changes: keep serving the catalog read last, and check again
		// at the next call.
		c.Log(nil, err)
		return s.Catalog, nil
	}
	if s == nil || next.Version != s.Version {
		c.Log(next, nil)
	}
	c.cur.Store(next)
	return next.Catalog, nil
}

// check reads the catalog under the check's time limit.
func (c *CatalogCache[V]) check(ctx context.Context, prev *CatalogSnapshot[V]) (*CatalogSnapshot[V], error) {
	qctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	c.stale.Store(false)
	next, err := c.Read(qctx, prev)
	if err != nil {
		return nil, c.Classify(ctx, qctx, err)
	}
	return next, nil
}

func (c *CatalogCache[V]) fresh(s *CatalogSnapshot[V]) bool {
	return c.Now().Sub(s.Checked) < c.Interval && !c.stale.Load()
}

// MarkStale has the next call check the version, however recently it was checked: a
// statement found that the schema changed under it.
func (c *CatalogCache[V]) MarkStale() { c.stale.Store(true) }
