package verify

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

// ErrUnknownKey is returned by a KeySource for a key id it does not have.
var ErrUnknownKey = errors.New("unknown key id")

// KeySource gives the verifier public keys by key id.
type KeySource interface {
	// Key returns the published key with this id. A remote source may
	// fetch its key set for an id it has not seen. ErrUnknownKey if no
	// such key is published.
	Key(ctx context.Context, kid string) (crypto.PublicKey, error)
	// Published reports, without I/O, whether key is still published as
	// kid. A cached token whose key was removed is verified no more.
	Published(kid string, key crypto.PublicKey) bool
}

// RevocationLister lists revocations (store.RevocationLister; a
// store.Store is one): whole, or those revoked since a time.
type RevocationLister interface {
	Revocations(ctx context.Context, now time.Time) ([]store.Revocation, error)
	RevocationsSince(ctx context.Context, since, now time.Time) ([]store.Revocation, error)
}

// Defaults of Config.
const (
	DefaultAudience          = "gatehouse"
	DefaultLeeway            = 10 * time.Second
	DefaultMaxTokenSize      = 8 << 10
	DefaultCacheSize         = 10000
	DefaultRevocationRefresh = 5 * time.Second
	DefaultRevocationReload  = 10 * time.Minute
	DefaultRevocationOverlap = time.Minute
)

// Config configures a Verifier. Zero values take the defaults named.
type Config struct {
	// Issuer is the required "iss". Required.
	Issuer string
	// Audience is the audience "aud" must contain. Default "gatehouse".
	Audience string
	// Algorithms are the accepted "alg" values. Only asymmetric
	// algorithms are allowed: "none" and HMAC never are. Whatever they
	// are, a token's "alg" must fit the type of the key its "kid" names
	// and, when the key source declares one (DeclaredKeys: the server's
	// own keys, JWKS entries with "alg"), the key's algorithm. Default:
	// each declared key's own algorithm, and RS256 for a key that
	// declares none.
	Algorithms []string
	// Types are the accepted "typ" header values, compared
	// case-insensitively; "application/" prefixes are allowed (RFC 9068
	// §2.1). Default ["at+jwt"].
	Types []string
	// Leeway is the clock skew allowed on exp, nbf and iat. Default 10s.
	Leeway time.Duration
	// MaxTokenSize bounds the token in bytes. Default 8 KiB.
	MaxTokenSize int
	// CacheSize bounds the verified-token cache in entries. Default
	// 10000; negative disables the cache.
	CacheSize int
	// Keys is where public keys come from. Required.
	Keys KeySource
	// Revocations, when set, makes every check (cache hits included)
	// refuse revoked tokens. The list is read into memory and refreshed
	// every RevocationRefresh; while the source fails, the last list keeps
	// applying.
	Revocations RevocationLister
	// RevocationRefresh is how often new revocations are read. Default 5s.
	// A lister that is also a store.RevocationNotifier is read besides at
	// each of its notices (see Run).
	RevocationRefresh time.Duration
	// RevocationReload is how often the whole list is read again (which
	// also drops expired entries); between reloads only what was revoked
	// since the last read, less RevocationOverlap, is read. Default 10m.
	RevocationReload time.Duration
	// RevocationOverlap is how far before the last read each incremental
	// read reaches back, so that a revocation committed late on a shared
	// store (or stamped by a clock a little behind) is not missed.
	// Default 1m.
	RevocationOverlap time.Duration
	// Logger receives operational logs. Default: no-op.
	Logger *zap.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Verifier checks access tokens. It is safe for concurrent use.
type Verifier struct {
	cfg     Config
	cache   *cache
	revoked atomic.Pointer[revoked]
	reads   revocationReads // guarded by its own mutex
	stale   atomic.Bool
	changed signal // fired when the revocations in force grow
	stats   Stats
	headers headerCache
	pinned  bool // Config.Algorithms was given
}

// New checks cfg and returns a Verifier. With revocations configured, the
// list is read once here; call Run to keep it fresh.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("verifier needs an issuer")
	}
	if cfg.Keys == nil {
		return nil, errors.New("verifier needs a key source")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Audience == "" {
		cfg.Audience = DefaultAudience
	}
	pinned := len(cfg.Algorithms) > 0
	if !pinned {
		cfg.Algorithms = asymmetricAlgorithms
	}

	if len(cfg.Types) == 0 {
		cfg.Types = []string{"at+jwt"}
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = DefaultLeeway
	}

	if cfg.MaxTokenSize <= 0 {
		cfg.MaxTokenSize = DefaultMaxTokenSize
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.RevocationRefresh <= 0 {
		cfg.RevocationRefresh = DefaultRevocationRefresh
	}
	if cfg.RevocationReload <= 0 {
		cfg.RevocationReload = DefaultRevocationReload
	}
	if cfg.RevocationOverlap <= 0 {
		cfg.RevocationOverlap = DefaultRevocationOverlap
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Verifier{cfg: cfg, pinned: pinned}
	if cfg.CacheSize > 0 {
		v.cache = newCache(cfg.CacheSize, cfg.Now, cfg.Logger)
	}
	if cfg.Revocations != nil {
		v.revoked.Store(newRevoked())
		if err := v.refreshRevocations(ctx); err != nil {
			return nil, fmt.Errorf("reading revocations: %w", err)
		}
	}
	return v, nil
}

// Close empties the cache of verified tokens and stops its sweeps: call it
// when v is let go (its configuration replaced), so that the scheduled
// sweep does not hold the cache, and the keys of its entries, until the
// last cached token expires. Verify goes on working, without the cache.
func (v *Verifier) Close() {
	if v.cache != nil {
		v.cache.end()
	}
}

// MaxLeeway bounds Config.Leeway.
const MaxLeeway = 5 * time.Minute

// Validate checks the rules of cfg that need no key source: only
// asymmetric algorithms, no empty type, a leeway of 0 to MaxLeeway. It
// changes nothing; New calls it.
func (cfg Config) Validate() error {
	if cfg.Issuer == "" {
		return errors.New("verifier needs an issuer")
	}
	for _, a := range cfg.Algorithms {
		if !asymmetric(a) {
			return fmt.Errorf("algorithm %q is not allowed: only RS, PS, ES algorithms and EdDSA are", a)
		}
	}
	if slices.Contains(cfg.Types, "") {
		return errors.New("empty token type")
	}
	if cfg.Leeway < 0 || cfg.Leeway > MaxLeeway {
		return fmt.Errorf("leeway %v out of range 0..%v", cfg.Leeway, MaxLeeway)
	}
	return nil
}

// asymmetricAlgorithms are the algorithms a verifier may accept.
var asymmetricAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

func asymmetric(alg string) bool { return slices.Contains(asymmetricAlgorithms, alg) }

// Verify checks a bearer token and returns its identity, or an *Error.
//
// A token refused only because its subject's entitlements changed after
// it was issued (store.Revocation.Narrows) is an *Error with the Reason
// ReasonEntitlementsChanged whose Narrowed is the token's identity with
// the pairs the subject still holds (the token's ∩ the subject's current
// set): a holder of a long-lived session may go on with that identity
// and end only what needed a pair it lost. Every other caller refuses
// the token like any other. A revocation of the token, its family or its
// subject refuses it as ReasonRevoked whatever changes there were.
func (v *Verifier) Verify(ctx context.Context, token string) (*Identity, error) {
	if len(token) > v.cfg.MaxTokenSize {
		v.stats.count(ReasonTooLarge)
		return nil, refuse(ReasonTooLarge, nil)
	}
	now := v.cfg.Now()
	if v.cache != nil {
		if e, ok := v.cache.get(token); ok && now.Before(e.id.Expiry) && v.cfg.Keys.Published(e.kid, e.key) {
			if rerr := v.checkRevoked(e.id); rerr != nil {
				v.stats.count(rerr.Reason)
				return nil, rerr
			}
			v.stats.hits.Add(1)
			return e.id, nil
		}
	}
	id, kid, key, verr := v.verifyCold(ctx, token)
	if verr != nil {
		v.stats.count(verr.Reason)
		return nil, verr
	}
	if rerr := v.checkRevoked(id); rerr != nil {
		v.stats.count(rerr.Reason)
		return nil, rerr
	}
	v.stats.misses.Add(1)
	if v.cache != nil {
		v.cache.put(token, &cacheEntry{id: id, kid: kid, key: key}, now)
	}
	return id, nil
}

// verifyCold checks a token without the cache: compact JWS form, pinned
// algorithm, header (no foreign key references, accepted typ, a kid),
// signature with a key of the key set, then the claims.
func (v *Verifier) verifyCold(ctx context.Context, token string) (*Identity, string, crypto.PublicKey, *Error) {
	headerB64, rest, ok1 := strings.Cut(token, ".")
	payloadB64, sigB64, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.IndexByte(sigB64, '.') >= 0 {
		return nil, "", nil, refuse(ReasonMalformed, errors.New("not a compact JWS"))
	}
	h, err := v.headers.parse(headerB64)
	if err != nil {
		return nil, "", nil, refuse(ReasonMalformed, fmt.Errorf("header: %w", err))
	}
	if !slices.Contains(v.cfg.Algorithms, h.Alg) {
		return nil, "", nil, refuse(ReasonAlgorithm, fmt.Errorf("alg %q is not accepted", truncate(h.Alg, 16)))
	}
	kid, e := v.checkHeader(h)
	if e != nil {
		return nil, "", nil, e
	}
	key, declared, err := v.key(ctx, kid)
	switch {
	case errors.Is(err, ErrUnknownKey):
		return nil, "", nil, refuse(ReasonUnknownKey, nil)
	case err != nil:
		return nil, "", nil, refuse(ReasonKeysUnavailable, err)
	}
	if e := v.checkKeyAlgorithm(h.Alg, key, declared); e != nil {
		return nil, "", nil, e
	}
	sig, err := decodeB64(sigB64)
	if err != nil {
		return nil, "", nil, refuse(ReasonMalformed, fmt.Errorf("signature: %w", err))
	}
	if d, ok := v.cfg.Keys.(DeclaredKeys); ok && d.LowS() && highS(h.Alg, sig) {
		return nil, "", nil, refuse(ReasonSignature, errHighS)
	}
	method := jwt.GetSigningMethod(h.Alg)
	if method == nil {
		return nil, "", nil, refuse(ReasonAlgorithm, nil)
	}
	if err := method.Verify(token[:len(headerB64)+1+len(payloadB64)], sig, key); err != nil {
		return nil, "", nil, refuse(ReasonSignature, err)
	}
	payload, err := decodeB64(payloadB64)
	if err != nil {
		return nil, "", nil, refuse(ReasonMalformed, fmt.Errorf("payload: %w", err))
	}
	c, err := parseClaims(payload)
	if err != nil {
		return nil, "", nil, refuse(ReasonMalformed, fmt.Errorf("claims: %w", err))
	}
	id, e := v.checkClaims(c, payload)
	if e != nil {
		return nil, "", nil, e
	}
	return id, kid, key, nil
}

// header is the JOSE header of a token. The key-reference members are
// noted only to refuse them.
type header struct {
	Alg, Typ string
	Kid      any
	foreign  string // the first of jku, jwk, x5u, x5c present, if any
	crit     bool
}

// parseHeader decodes an encoded JOSE header strictly: canonical base64url,
// exact member names, no duplicates.
func parseHeader(enc string) (*header, error) {
	raw, err := decodeB64(enc)
	if err != nil {
		return nil, err
	}
	m, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	h := new(header)
	if _, err := member(m, "alg", &h.Alg); err != nil {
		return nil, err
	}
	if _, err := member(m, "typ", &h.Typ); err != nil {
		return nil, err
	}
	if _, err := member(m, "kid", &h.Kid); err != nil {
		return nil, err
	}
	for _, name := range []string{"jku", "jwk", "x5u", "x5c"} {
		if _, ok := m[name]; ok && h.foreign == "" {
			h.foreign = name
		}
	}
	_, h.crit = m["crit"]
	return h, nil
}

// checkHeader refuses foreign key references, critical extensions and
// unaccepted types before any key is looked up; it returns the kid.
func (v *Verifier) checkHeader(h *header) (string, *Error) {
	if h.foreign != "" {
		return "", refuse(ReasonForeignKey, fmt.Errorf("token carries a %q header", h.foreign))
	}
	if h.crit {
		return "", refuse(ReasonMalformed, errors.New("unsupported critical header extension"))
	}
	typ := strings.TrimPrefix(strings.ToLower(h.Typ), "application/")
	ok := false
	for _, want := range v.cfg.Types {
		ok = ok || typ == strings.TrimPrefix(strings.ToLower(want), "application/")
	}
	if !ok {
		return "", refuse(ReasonType, fmt.Errorf("typ %q", truncate(typ, 32)))
	}
	kid, isString := h.Kid.(string)
	if !isString || kid == "" || len(kid) > 256 {
		return "", refuse(ReasonUnknownKey, errors.New("missing or malformed kid"))
	}
	return kid, nil
}

// claims are the members of an access token the check reads.
type claims struct {
	Iss, Sub, Jti, ClientID, Fid string
	Aud, Scope                   any
	Exp, Nbf, Iat, AuthTime      *float64
	Details                      json.RawMessage // authorization_details, when present
}

// parseClaims decodes a verified payload strictly: exact member names,
// no duplicates, NumericDates in range, string members as strings.
func parseClaims(payload []byte) (*claims, error) {
	m, err := decodeObject(payload)
	if err != nil {
		return nil, err
	}
	c := new(claims)
	for _, s := range []struct {
		name string
		dst  *string
	}{{"iss", &c.Iss}, {"sub", &c.Sub}, {"jti", &c.Jti}, {"client_id", &c.ClientID}, {"fid", &c.Fid}} {
		if _, err := member(m, s.name, s.dst); err != nil {
			return nil, err
		}
	}
	if _, err := member(m, "aud", &c.Aud); err != nil {
		return nil, err
	}
	if _, err := member(m, "scope", &c.Scope); err != nil {
		return nil, err
	}
	c.Details = m["authorization_details"]
	for _, d := range []struct {
		name string
		dst  **float64
	}{{"exp", &c.Exp}, {"nbf", &c.Nbf}, {"iat", &c.Iat}, {"auth_time", &c.AuthTime}} {
		if *d.dst, err = numericDate(m, d.name); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// checkClaims validates issuer, audience and times, and builds the
// identity.
func (v *Verifier) checkClaims(c *claims, payload []byte) (*Identity, *Error) {
	now, leeway := v.cfg.Now(), v.cfg.Leeway
	switch {
	case c.Exp == nil:
		return nil, refuse(ReasonMissingExpiry, nil)
	case !now.Before(unixTime(*c.Exp).Add(leeway)):
		return nil, refuse(ReasonExpired, nil)
	case c.Nbf != nil && now.Add(leeway).Before(unixTime(*c.Nbf)):
		return nil, refuse(ReasonNotYetValid, errors.New("nbf in the future"))
	case c.Iat != nil && now.Add(leeway).Before(unixTime(*c.Iat)):
		return nil, refuse(ReasonNotYetValid, errors.New("iat in the future"))
	case c.Iss != v.cfg.Issuer:
		return nil, refuse(ReasonIssuer, fmt.Errorf("iss %q", truncate(c.Iss, 64)))
	case !AudienceHolds(c.Aud, v.cfg.Audience):
		return nil, refuse(ReasonAudience, nil)
	case c.Sub == "":
		return nil, refuse(ReasonMalformed, errors.New("no sub claim"))
	}
	id := &Identity{Subject: c.Sub, ClientID: c.ClientID, Issuer: c.Iss, JTI: c.Jti, FamilyID: c.Fid,
		Expiry: unixTime(*c.Exp), payload: payload}
	if c.Iat != nil {
		id.IssuedAt = unixTime(*c.Iat)
	}
	if c.AuthTime != nil {
		id.AuthTime = unixTime(*c.AuthTime)
	}
	if c.Details != nil {
		// A token whose entitlements cannot be read is refused, not read
		// as granting none: it was signed by someone who meant something.
		set, err := entitle.ParseClaim(c.Details)
		if err != nil {
			return nil, refuse(ReasonMalformed, err)
		}
		id.Entitlements = set
	}
	switch s := c.Scope.(type) {
	case string:
		// RFC 6749 §3.3: scope-tokens separated by the space (%x20) alone.
		for tok := range strings.SplitSeq(s, " ") {
			if tok == "" {
				continue
			}
			if !validScope(tok) {
				return nil, refuse(ReasonMalformed, errors.New("scope holds a character RFC 6749 §3.3 forbids"))
			}
			id.Scopes = append(id.Scopes, tok)
		}
	case []any:
		for _, item := range s {
			str, ok := item.(string)
			if !ok || !validScope(str) {
				return nil, refuse(ReasonMalformed, errors.New("scope array holds a non-scope"))
			}
			id.Scopes = append(id.Scopes, str)
		}
	case nil:
	default:
		return nil, refuse(ReasonMalformed, errors.New("scope is neither a string nor an array"))
	}
	return id, nil
}

func unixTime(f float64) time.Time {
	sec := math.Floor(f)
	return time.Unix(int64(sec), int64((f-sec)*1e9))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
