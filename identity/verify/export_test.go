package verify

// CacheLen exposes the cache size to the tests.
func CacheLen(v *Verifier) int { return v.cache.len() }
