package verify

import (
	"crypto"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/internal/contain"
	"go.uber.org/zap"
)

// cacheEntry is a verified token: its identity and the key that verified
// it, so that removing the key ends the entry.
type cacheEntry struct {
	id  *Identity
	kid string
	key crypto.PublicKey
}

// cache maps whole tokens to their verification, bounded in entries.
// Entries never outlive their token's exp: Verify ignores an expired
// entry, put sweeps them before evicting live ones, and a sweep removes
// them every cacheSweepInterval while the cache holds any, so that a cache
// that served a day of sessions holds nothing once their tokens expired.
//
// Verifier.Close ends the cache: it drops its entries, stops its sweep and
// caches nothing more. The scheduled sweep would otherwise hold the cache,
// its entries and their keys until the last token expired, long after the
// verifier itself was let go: a config reload with live sessions (which
// the gateway verifies again with the new config's verifier) would leave
// one such cache per reload.
type cache struct {
	mu       sync.RWMutex
	m        map[string]*cacheEntry
	max      int
	now      func() time.Time
	log      *zap.Logger
	sweeping bool        // a sweep is scheduled; under mu
	sweepAt  *time.Timer // the scheduled sweep; under mu
	ended    bool        // Verifier.Close was called; under mu
	peak     int         // the most entries m has held since it was made: a Go map never shrinks
}

// cacheSweepInterval is how often a cache holding entries removes the
// expired ones.
const cacheSweepInterval = time.Minute

func newCache(max int, now func() time.Time, log *zap.Logger) *cache {
	return &cache{m: make(map[string]*cacheEntry, min(max, 1024)), max: max, now: now, log: log}
}

// end drops the entries and the scheduled sweep; nothing is cached after.
func (c *cache) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended, c.m, c.peak = true, map[string]*cacheEntry{}, 0
	if c.sweepAt != nil {
		c.sweepAt.Stop()
	}
	c.sweeping = false
}

func (c *cache) get(token string) (*cacheEntry, bool) {
	c.mu.RLock()
	e, ok := c.m[token]
	c.mu.RUnlock()
	return e, ok
}

func (c *cache) put(token string, e *cacheEntry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	if len(c.m) >= c.max {
		for k, old := range c.m {
			if !now.Before(old.id.Expiry) {
				delete(c.m, k)
			}
		}
	}
	// Still full: drop an eighth at random (map order is random), so a
	// flood of distinct tokens costs O(1) per insert on average.
	if len(c.m) >= c.max {
		drop := max(c.max/8, 1)
		for k := range c.m {
			if drop == 0 {
				break
			}
			delete(c.m, k)
			drop--
		}
	}
	c.m[token] = e
	c.peak = max(c.peak, len(c.m))
	if !c.sweeping {
		c.sweeping = true
		c.sweepAt = contain.AfterFunc(c.log, "verify.cache_sweep", cacheSweepInterval, c.sweep)
	}
}

// sweep removes the expired entries, and makes the map anew once it holds
// a quarter of its peak or less (its room is never given back otherwise);
// it schedules the next sweep while entries remain.
func (c *cache) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for k, e := range c.m {
		if !now.Before(e.id.Expiry) {
			delete(c.m, k)
		}
	}
	if len(c.m) <= c.peak/4 {
		m := make(map[string]*cacheEntry, len(c.m))
		for k, e := range c.m {
			m[k] = e
		}
		c.m, c.peak = m, len(m)
	}
	if len(c.m) == 0 || c.ended {
		c.sweeping = false
		return
	}
	c.sweepAt = contain.AfterFunc(c.log, "verify.cache_sweep", cacheSweepInterval, c.sweep)
}

func (c *cache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
