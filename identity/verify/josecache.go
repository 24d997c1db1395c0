package verify

import "sync"

// maxCachedHeaders bounds the JOSE header cache: an issuer has a few keys, so a
// few distinct headers; junk headers fill it at most this far.
const maxCachedHeaders = 64

// headerCache remembers decoded JOSE headers by their encoded form: every
// token one key signs carries the same header, so a cold verification
// decodes only its claims.
type headerCache struct {
	mu sync.RWMutex
	m  map[string]*header
}

// parse decodes an encoded header, from the cache when it was seen. The
// result is shared: read-only.
func (c *headerCache) parse(enc string) (*header, error) {
	c.mu.RLock()
	h, ok := c.m[enc]
	c.mu.RUnlock()
	if ok {
		return h, nil
	}
	h, err := parseHeader(enc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]*header)
	}
	if len(c.m) < maxCachedHeaders {
		c.m[enc] = h
	}
	c.mu.Unlock()
	return h, nil
}
