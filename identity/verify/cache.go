package verify

import (
	"crypto"
	"sync"
	"time"
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
// entry, and put sweeps them before evicting live ones.
type cache struct {
	mu  sync.RWMutex
	m   map[string]*cacheEntry
	max int
}

func newCache(max int) *cache {
	return &cache{m: make(map[string]*cacheEntry, min(max, 1024)), max: max}
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
}

func (c *cache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
