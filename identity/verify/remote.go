package verify

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// Defaults of RemoteConfig.
const (
	DefaultJWKSRefresh     = 5 * time.Minute
	DefaultJWKSMinInterval = 5 * time.Second
	DefaultJWKSTimeout     = 10 * time.Second
	maxJWKSSize            = 1 << 20
	maxJWKSKeys            = 100
	minRSABits             = 2048
)

// RemoteConfig configures a RemoteKeySet.
type RemoteConfig struct {
	// URL is the issuer's JWKS URL. Required.
	URL string
	// Client fetches the key set. Default: a client with Timeout.
	Client *http.Client
	// Refresh is how often the key set is re-read on schedule. Default 5m.
	Refresh time.Duration
	// MinInterval is the least time between two fetches caused by unknown
	// key ids; an unknown kid met in between is answered from the miss
	// cache. Default 5s.
	MinInterval time.Duration
	// Timeout bounds one fetch. Default 10s.
	Timeout time.Duration
	// Logger receives fetch failures. Default: no-op.
	Logger *zap.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// RemoteKeySet is a KeySource reading a remote issuer's JWKS: cached,
// refreshed on schedule and on an unknown kid (single flight, at most once
// per MinInterval, unknown kids cached as misses), and serving the last
// good set while the issuer is unreachable.
type RemoteKeySet struct {
	cfg  RemoteConfig
	life context.Context // NewRemoteKeySet's: the fetches run on it
	wg   sync.WaitGroup  // the fetches under way (Run waits for them)

	mu        sync.RWMutex
	keys      map[string]crypto.PublicKey
	algs      map[string]string // the "alg" each key declares, if any
	fetched   time.Time         // last successful fetch
	attempted time.Time         // last fetch attempt
	lastErr   error
	inflight  chan struct{} // closed when the running fetch ends

	stats remoteStats
}

type remoteStats struct {
	mu       sync.Mutex
	fetches  int64
	failures int64
}

// NewRemoteKeySet returns a key set for cfg.URL and tries a first fetch;
// a failure is logged, not returned, so a gateway can start while the
// issuer is down.
func NewRemoteKeySet(ctx context.Context, cfg RemoteConfig) (*RemoteKeySet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultJWKSRefresh
	}
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = DefaultJWKSMinInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultJWKSTimeout
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout, CheckRedirect: noDowngrade}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &RemoteKeySet{cfg: cfg, life: ctx, keys: map[string]crypto.PublicKey{}}
	_ = r.refresh(ctx, true)
	return r, nil
}

// Validate checks that the key set's URL is an absolute http(s) URL
// without user info or fragment. It changes nothing.
func (cfg RemoteConfig) Validate() error {
	u, err := url.Parse(cfg.URL)
	if cfg.URL == "" || err != nil {
		return errors.New("jwks_url is not a URL") // not quoted: it may hold a password
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("jwks_url %q must be an absolute http(s) URL without user info or fragment", shownURL(u))
	}
	return nil
}

// Key implements KeySource.
func (r *RemoteKeySet) Key(ctx context.Context, kid string) (crypto.PublicKey, error) {
	k, _, err := r.DeclaredKey(ctx, kid)
	return k, err
}

// DeclaredKey implements DeclaredKeys: the key kid and the "alg" of its
// JWK ("" when it has none), read under one lock from one fetched set (a
// fetch replaces the keys and their algs together).
func (r *RemoteKeySet) DeclaredKey(ctx context.Context, kid string) (crypto.PublicKey, string, error) {
	r.mu.RLock()
	k, ok := r.keys[kid]
	alg := r.algs[kid]
	recent := r.cfg.Now().Sub(r.attempted) < r.cfg.MinInterval
	running := r.inflight != nil
	everFetched := !r.fetched.IsZero()
	lastErr := r.lastErr
	r.mu.RUnlock()
	if ok {
		return k, alg, nil
	}
	if recent && !running {
		// A miss inside the interval: no fetch, so a flood of unknown
		// kids cannot hammer the issuer. (A miss while a fetch runs
		// waits for it: the key may be in what it brings.)
		if !everFetched && lastErr != nil {
			return nil, "", fmt.Errorf("key set unavailable: %w", lastErr)
		}
		return nil, "", ErrUnknownKey
	}
	if err := r.refresh(ctx, false); err != nil && !everFetched {
		return nil, "", fmt.Errorf("key set unavailable: %w", err)
	}
	r.mu.RLock()
	k, ok = r.keys[kid]
	alg = r.algs[kid]
	r.mu.RUnlock()
	if !ok {
		return nil, "", ErrUnknownKey
	}
	return k, alg, nil
}

// Published implements KeySource.
func (r *RemoteKeySet) Published(kid string, key crypto.PublicKey) bool {
	r.mu.RLock()
	k, ok := r.keys[kid]
	r.mu.RUnlock()
	return ok && SameKey(k, key)
}

// LowS implements DeclaredKeys: false, a remote issuer may sign ES256
// with either s (Go's crypto/ecdsa does). The twin (r, n−s) of one of its
// tokens verifies as that token does, with the same claims: the same
// identity, refused by the same revocations (by jti, family, subject),
// and cached apart from it only as the same verdict.
func (*RemoteKeySet) LowS() bool { return false }

// Run refreshes the key set on schedule until ctx ends, then waits for a
// fetch under way (it runs on NewRemoteKeySet's context: one given the
// same context ends with it).
func (r *RemoteKeySet) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.wg.Wait()
			return
		case <-t.C:
			_ = r.refresh(ctx, true)
		}
	}
}

// Fetches returns how many fetches were attempted and how many failed.
func (r *RemoteKeySet) Fetches() (attempts, failures int64) {
	r.stats.mu.Lock()
	defer r.stats.mu.Unlock()
	return r.stats.fetches, r.stats.failures
}

// noDowngrade is the default client's redirect policy: at most 5
// redirects, none from https to http (the key set would then be anyone's
// on the way).
func noDowngrade(req *http.Request, via []*http.Request) error {
	switch {
	case len(via) >= 5:
		return errors.New("stopped after 5 redirects")
	case via[0].URL.Scheme == "https" && req.URL.Scheme != "https":
		return errors.New("redirect from https to http refused")
	}
	return nil
}

// refresh fetches the key set once, or joins the fetch already running,
// and waits for it, or for ctx to end; unless scheduled, it starts none
// within MinInterval of the last. The fetch runs on a goroutine of its
// own (counted in wg), on the key set's context (life), not ctx, and
// within Timeout: a caller that gives up, a client dropping its request,
// must not fail the fetch for the callers that wait with it, nor spend
// the interval between fetches on nothing.
func (r *RemoteKeySet) refresh(ctx context.Context, scheduled bool) error {
	r.mu.Lock()
	wait := r.inflight
	if wait == nil && !scheduled && r.cfg.Now().Sub(r.attempted) < r.cfg.MinInterval {
		err := r.lastErr
		r.mu.Unlock()
		return err
	}
	if wait == nil {
		wait = make(chan struct{})
		r.inflight = wait
		r.attempted = r.cfg.Now()
		r.wg.Add(1)
		contain.Go(r.cfg.Logger, "verifier.jwks", func() {
			defer r.wg.Done()
			r.fetchAndKeep(r.life, wait)
		}, func() { r.fetchPanicked(wait) })
	}
	r.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.lastErr
}

// fetchAndKeep fetches the key set and keeps it (refresh's goroutine),
// then closes done.
func (r *RemoteKeySet) fetchAndKeep(ctx context.Context, done chan struct{}) {
	keys, algs, err := r.fetch(ctx)

	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight = nil
	close(done)
	r.stats.mu.Lock()
	r.stats.fetches++
	if err != nil {
		r.stats.failures++
	}
	r.stats.mu.Unlock()
	r.lastErr = err
	if err != nil {
		r.cfg.Logger.Warn("fetching remote key set failed: the last good set keeps serving",
			zap.String("url", r.cfg.URL), zap.Error(err))
		return
	}
	// Keep the old key objects where nothing changed, so cached tokens
	// stay valid across refreshes.
	for kid, k := range keys {
		if old, ok := r.keys[kid]; ok && SameKey(old, k) {
			keys[kid] = old
		}
	}
	r.keys, r.algs = keys, algs
	r.fetched = r.cfg.Now()
}

// Ready reports whether the key set holds keys (a fetch succeeded once), for a
// readiness probe: the error of the last fetch when it holds none.
func (r *RemoteKeySet) Ready() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.keys) > 0 {
		return nil
	}
	if r.lastErr != nil {
		return r.lastErr
	}
	return errors.New("the remote key set was not fetched yet")
}

// fetchPanicked ends a fetch that panicked (contained): its waiters are
// released with an error, and the last good set keeps serving.
func (r *RemoteKeySet) fetchPanicked(done chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inflight != done {
		return // it had ended
	}
	r.inflight = nil
	r.lastErr = errFetchPanicked
	close(done)
}

// errFetchPanicked is the error of a key-set fetch that panicked.
var errFetchPanicked = errors.New("fetching the remote key set panicked")

func (r *RemoteKeySet) fetch(ctx context.Context) (map[string]crypto.PublicKey, map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.cfg.URL, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("key set answered %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading key set: %w", err)
	}
	if len(body) > maxJWKSSize {
		return nil, nil, fmt.Errorf("key set larger than %d bytes", maxJWKSSize)
	}
	return parseJWKS(body)
}

// ParseJWKS reads the signature keys of a JWK Set (RSA, EC and Ed25519
// keys with a kid; other keys are skipped).
func ParseJWKS(body []byte) (map[string]crypto.PublicKey, error) {
	keys, _, err := parseJWKS(body)
	return keys, err
}

// parseJWKS is ParseJWKS, with the "alg" each key declares. A key whose
// "alg" is no asymmetric signature algorithm ("none", HMAC, an
// encryption algorithm) or does not fit its type is skipped: no token
// could verify with it. A kid that two usable entries of different keys
// share names no key.
func parseJWKS(body []byte) (map[string]crypto.PublicKey, map[string]string, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Use string `json:"use"`
			Kid string `json:"kid"`
			Alg string `json:"alg"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, nil, fmt.Errorf("parsing key set: %w", err)
	}
	if len(set.Keys) > maxJWKSKeys {
		return nil, nil, fmt.Errorf("key set holds %d keys, more than %d", len(set.Keys), maxJWKSKeys)
	}
	keys, algs := map[string]crypto.PublicKey{}, map[string]string{}
	twice := map[string]bool{} // kids of two usable entries: neither is used
	b64 := base64.RawURLEncoding
	for _, k := range set.Keys {
		if k.Kid == "" || (k.Use != "" && k.Use != "sig") {
			continue
		}
		var key crypto.PublicKey
		switch k.Kty {
		case "RSA":
			n, err1 := b64.DecodeString(k.N)
			e, err2 := b64.DecodeString(k.E)
			// The modulus's bit length, not its byte count: zero bytes or
			// bits in front would pass a short key for a long one.
			modulus := new(big.Int).SetBytes(n)
			if err1 != nil || err2 != nil || modulus.BitLen() < minRSABits || len(e) == 0 || len(e) > 4 {
				return nil, nil, fmt.Errorf("key %q: malformed or weak RSA key", k.Kid)
			}
			key = &rsa.PublicKey{N: modulus, E: int(new(big.Int).SetBytes(e).Int64())}
		case "EC":
			var curve elliptic.Curve
			switch k.Crv {
			case "P-256":
				curve = elliptic.P256()
			case "P-384":
				curve = elliptic.P384()
			case "P-521":
				curve = elliptic.P521()
			default:
				continue
			}
			x, err1 := b64.DecodeString(k.X)
			y, err2 := b64.DecodeString(k.Y)
			size := (curve.Params().BitSize + 7) / 8
			if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
				return nil, nil, fmt.Errorf("key %q: malformed EC key", k.Kid)
			}
			pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
			if err != nil {
				return nil, nil, fmt.Errorf("key %q: %w", k.Kid, err)
			}
			key = pub
		case "OKP":
			if k.Crv != "Ed25519" {
				continue
			}
			x, err := b64.DecodeString(k.X)
			if err != nil || len(x) != ed25519.PublicKeySize {
				return nil, nil, fmt.Errorf("key %q: malformed Ed25519 key", k.Kid)
			}
			key = ed25519.PublicKey(x)
		}
		if key == nil || k.Alg != "" && (!asymmetric(k.Alg) || !keyFits(k.Alg, key)) {
			continue // of no use: an entry of another kind cannot touch one of the same kid
		}
		if prev, seen := keys[k.Kid]; seen && !(SameKey(prev, key) && algs[k.Kid] == k.Alg) {
			twice[k.Kid] = true // the same entry listed twice is no ambiguity
		}
		keys[k.Kid] = key
		if k.Alg != "" {
			algs[k.Kid] = k.Alg
		} else {
			delete(algs, k.Kid)
		}
	}
	// A kid that names two keys is ambiguous: which one a token means
	// cannot be told, so neither verifies anything.
	for kid := range twice {
		delete(keys, kid)
		delete(algs, kid)
	}
	return keys, algs, nil
}

// SameKey reports whether a and b are the same public key, by the key
// type's own Equal: an ed25519.PublicKey is a slice, which == panics on.
// Key sources use it in Published.
func SameKey(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

var _ DeclaredKeys = (*RemoteKeySet)(nil)

// shownURL is u as an error may quote it: without user info, query or
// fragment, any of which may hold a secret.
func shownURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}
