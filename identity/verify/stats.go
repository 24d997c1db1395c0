package verify

import (
	"sync"
	"sync/atomic"
)

// Stats counts verifications by outcome, for metrics.
type Stats struct {
	hits             atomic.Int64
	misses           atomic.Int64
	revocationErrors atomic.Int64
	notices          atomic.Int64
	refused          sync.Map // Reason -> *atomic.Int64
}

func (s *Stats) count(r Reason) {
	c, ok := s.refused.Load(r)
	if !ok {
		c, _ = s.refused.LoadOrStore(r, new(atomic.Int64))
	}
	c.(*atomic.Int64).Add(1)
}

// Snapshot is a copy of the counters.
type Snapshot struct {
	CacheHits         int64            // verified from the cache
	CacheMisses       int64            // verified cold
	Refused           map[Reason]int64 // refused, by reason
	RevocationErrors  int64            // failed refreshes of the revocation list
	RevocationNotices int64            // reads of the revocation list on a store's notice
}

// Stats returns the verifier's counters.
func (v *Verifier) Stats() Snapshot {
	snap := Snapshot{
		CacheHits: v.stats.hits.Load(), CacheMisses: v.stats.misses.Load(),
		RevocationErrors: v.stats.revocationErrors.Load(), RevocationNotices: v.stats.notices.Load(),
		Refused: map[Reason]int64{},
	}
	v.stats.refused.Range(func(k, c any) bool {
		snap.Refused[k.(Reason)] = c.(*atomic.Int64).Load()
		return true
	})
	return snap
}
