package verify

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"

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

// RevocationLister lists revoked access tokens; store.Store is one.
type RevocationLister interface {
	Revocations(ctx context.Context, now time.Time) ([]store.Revocation, error)
}

// Defaults of Config.
const (
	DefaultAudience          = "gatehouse"
	DefaultLeeway            = 10 * time.Second
	DefaultMaxTokenSize      = 8 << 10
	DefaultCacheSize         = 10000
	DefaultRevocationRefresh = 5 * time.Second
)

// Config configures a Verifier. Zero values take the defaults named.
type Config struct {
	// Issuer is the required "iss". Required.
	Issuer string
	// Audience is the audience "aud" must contain. Default "gatehouse".
	Audience string
	// Algorithms are the accepted "alg" values. Default ["RS256"]. Only
	// asymmetric algorithms are allowed: "none" and HMAC never are.
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
	// RevocationRefresh is how often revocations are re-read. Default 5s.
	RevocationRefresh time.Duration
	// Logger receives operational logs. Default: no-op.
	Logger *zap.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Identity is who a verified token speaks for. It is shared between
// callers through the cache: treat it as read-only.
type Identity struct {
	Subject  string
	ClientID string
	Scopes   []string
	Issuer   string
	JTI      string
	Expiry   time.Time
	IssuedAt time.Time
	AuthTime time.Time // zero for tokens without a user
	Claims   map[string]any
}

// HasScope reports whether the token grants scope.
func (id *Identity) HasScope(scope string) bool {
	for _, s := range id.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// Verifier checks access tokens. It is safe for concurrent use.
type Verifier struct {
	cfg     Config
	parser  *jwt.Parser
	cache   *cache
	revoked atomic.Pointer[revocationSet]
	stale   atomic.Bool
	stats   Stats
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
	if cfg.Audience == "" {
		cfg.Audience = DefaultAudience
	}
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = []string{"RS256"}
	}
	for _, a := range cfg.Algorithms {
		if !asymmetric(a) {
			return nil, fmt.Errorf("algorithm %q is not allowed: only RS, PS and ES algorithms are", a)
		}
	}
	if len(cfg.Types) == 0 {
		cfg.Types = []string{"at+jwt"}
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = DefaultLeeway
	}
	if cfg.Leeway < 0 || cfg.Leeway > 5*time.Minute {
		return nil, fmt.Errorf("leeway %v out of range 0..5m", cfg.Leeway)
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
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Verifier{cfg: cfg}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods(cfg.Algorithms),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
	)
	if cfg.CacheSize > 0 {
		v.cache = newCache(cfg.CacheSize)
	}
	if cfg.Revocations != nil {
		v.revoked.Store(&revocationSet{})
		if err := v.refreshRevocations(ctx); err != nil {
			return nil, fmt.Errorf("reading revocations: %w", err)
		}
	}
	return v, nil
}

func asymmetric(alg string) bool {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512":
		return true
	}
	return false
}

// Verify checks a bearer token and returns its identity, or an *Error.
func (v *Verifier) Verify(ctx context.Context, token string) (*Identity, error) {
	if len(token) > v.cfg.MaxTokenSize {
		v.stats.count(ReasonTooLarge)
		return nil, refuse(ReasonTooLarge, nil)
	}
	now := v.cfg.Now()
	if v.cache != nil {
		if e, ok := v.cache.get(token); ok && now.Before(e.id.Expiry) && v.cfg.Keys.Published(e.kid, e.key) {
			if v.isRevoked(e.id.JTI) {
				v.stats.count(ReasonRevoked)
				return nil, refuse(ReasonRevoked, nil)
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
	if v.isRevoked(id.JTI) {
		v.stats.count(ReasonRevoked)
		return nil, refuse(ReasonRevoked, nil)
	}
	v.stats.misses.Add(1)
	if v.cache != nil {
		v.cache.put(token, &cacheEntry{id: id, kid: kid, key: key}, now)
	}
	return id, nil
}

// verifyCold checks a token without the cache.
func (v *Verifier) verifyCold(ctx context.Context, token string) (*Identity, string, crypto.PublicKey, *Error) {
	var kid string
	var key crypto.PublicKey
	var keyErr *Error
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		if e := v.checkHeader(t.Header); e != nil {
			keyErr = e
			return nil, e
		}
		kid, _ = t.Header["kid"].(string)
		k, err := v.cfg.Keys.Key(ctx, kid)
		switch {
		case errors.Is(err, ErrUnknownKey):
			keyErr = refuse(ReasonUnknownKey, nil)
			return nil, keyErr
		case err != nil:
			keyErr = refuse(ReasonKeysUnavailable, err)
			return nil, keyErr
		}
		key = k
		return k, nil
	})
	if err != nil {
		if keyErr != nil {
			return nil, "", nil, keyErr
		}
		return nil, "", nil, classify(err)
	}
	id, e := identityOf(claims)
	if e != nil {
		return nil, "", nil, e
	}
	return id, kid, key, nil
}

// checkHeader refuses foreign key references and unaccepted types before
// any key is looked up.
func (v *Verifier) checkHeader(h map[string]any) *Error {
	for _, name := range []string{"jku", "jwk", "x5u", "x5c"} {
		if _, ok := h[name]; ok {
			return refuse(ReasonForeignKey, fmt.Errorf("token carries a %q header", name))
		}
	}
	typ, _ := h["typ"].(string)
	typ = strings.TrimPrefix(strings.ToLower(typ), "application/")
	ok := false
	for _, want := range v.cfg.Types {
		ok = ok || typ == strings.TrimPrefix(strings.ToLower(want), "application/")
	}
	if !ok {
		return refuse(ReasonType, fmt.Errorf("typ %q", truncate(typ, 32)))
	}
	if kid, isString := h["kid"].(string); !isString || kid == "" || len(kid) > 256 {
		return refuse(ReasonUnknownKey, errors.New("missing or malformed kid"))
	}
	return nil
}

// classify maps golang-jwt's errors to reasons.
func classify(err error) *Error {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return refuse(ReasonMalformed, err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		if strings.Contains(err.Error(), "signing method") {
			return refuse(ReasonAlgorithm, err)
		}
		return refuse(ReasonSignature, err)
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && strings.Contains(err.Error(), "exp"):
		return refuse(ReasonMissingExpiry, err)
	case errors.Is(err, jwt.ErrTokenExpired):
		return refuse(ReasonExpired, err)
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return refuse(ReasonNotYetValid, err)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return refuse(ReasonIssuer, err)
	case errors.Is(err, jwt.ErrTokenInvalidAudience), errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return refuse(ReasonAudience, err)
	}
	return refuse(ReasonMalformed, err)
}

// identityOf reads the identity out of verified claims.
func identityOf(c jwt.MapClaims) (*Identity, *Error) {
	id := &Identity{Claims: c}
	id.Subject, _ = c["sub"].(string)
	if id.Subject == "" {
		return nil, refuse(ReasonMalformed, errors.New("no sub claim"))
	}
	id.ClientID, _ = c["client_id"].(string)
	id.Issuer, _ = c["iss"].(string)
	id.JTI, _ = c["jti"].(string)
	switch s := c["scope"].(type) {
	case string:
		id.Scopes = strings.Fields(s)
	case []any:
		for _, item := range s {
			str, ok := item.(string)
			if !ok {
				return nil, refuse(ReasonMalformed, errors.New("scope array holds a non-string"))
			}
			id.Scopes = append(id.Scopes, str)
		}
	case nil:
	default:
		return nil, refuse(ReasonMalformed, errors.New("scope is neither a string nor an array"))
	}
	if exp, err := c.GetExpirationTime(); err == nil && exp != nil {
		id.Expiry = exp.Time
	}
	if iat, err := c.GetIssuedAt(); err == nil && iat != nil {
		id.IssuedAt = iat.Time
	}
	if at, ok := c["auth_time"].(float64); ok {
		id.AuthTime = time.Unix(int64(at), 0)
	}
	return id, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
