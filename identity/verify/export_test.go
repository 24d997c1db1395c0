package verify

import "encoding/json"

// CacheLen exposes the cache size to the tests.
func CacheLen(v *Verifier) int { return v.cache.len() }

// SweepCache runs the cache's sweep now, as its timer would: whether
// another is scheduled, and the room its map was last made with.
func SweepCache(v *Verifier) (scheduled bool, room int) {
	v.cache.sweep()
	v.cache.mu.RLock()
	defer v.cache.mu.RUnlock()
	return v.cache.sweeping, v.cache.peak
}

// SweepScheduled reports whether a sweep of v's cache is scheduled.
func SweepScheduled(v *Verifier) bool {
	v.cache.mu.RLock()
	defer v.cache.mu.RUnlock()
	return v.cache.sweeping
}

// ClaimsDecoded reports whether id's claims were decoded yet. Call it on
// the goroutine that calls Claims.
func ClaimsDecoded(id *Identity) bool                                    { return id.claims != nil }
func DecodeObjectForTest(raw []byte) (map[string]json.RawMessage, error) { return decodeObject(raw) }

// NoDowngrade is the default key-set client's redirect policy.
var NoDowngrade = noDowngrade

// ReadsStarted is how many revocation reads v has started.
func ReadsStarted(v *Verifier) uint64 { return v.reads.started.Load() }
