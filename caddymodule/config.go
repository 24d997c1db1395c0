package caddymodule

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// IdentityConfig converts the app's configuration into the identity
// server's, without what only a running server has: the client-IP function
// and the metrics. It reads the key encryption key the signing_keys name.
// It checks only what conversion needs (digests that decode); the rules
// are the core's, in identity.Config.Validate. Command-line tools use it to
// apply the same token policy as the servers (e.g. identity.KeyRetention).
func (a *App) IdentityConfig() (identity.Config, error) {
	cfg := identity.Config{
		Issuer:                  a.Issuer,
		Audience:                a.Audience,
		AccessTokenLifetime:     time.Duration(a.AccessTokenLifetime),
		IDTokenLifetime:         time.Duration(a.IDTokenLifetime),
		Refresh:                 a.RefreshToken.policy(),
		UniformErrorStatus:      a.UniformErrorStatus,
		HSTS:                    a.HSTS,
		PasswordHashConcurrency: a.PasswordHashConcurrency,
		Lockout:                 a.Lockout.policy(),
		SecondFactorScopes:      a.SecondFactor.scopes(),
		TOTPIssuer:              a.SecondFactor.totpIssuer(),
		CodeLifetime:            time.Duration(a.CodeLifetime),
		DeviceCodeLifetime:      time.Duration(a.DeviceCodeLifetime),
		DevicePollInterval:      time.Duration(a.DevicePollInterval),
		SessionIdleTimeout:      time.Duration(a.SessionIdleTimeout),
		SessionLifetime:         time.Duration(a.SessionLifetime),
		Logger:                  a.logger,
	}
	var err error
	if cfg.Keys, err = a.SigningKeys.keyPolicy(); err != nil {
		return identity.Config{}, err
	}
	for _, c := range a.Clients {
		ic, err := c.identityClient()
		if err != nil {
			return identity.Config{}, err
		}
		cfg.Clients = append(cfg.Clients, ic)
	}
	for _, r := range a.APIResources {
		ir, err := r.identityResource()
		if err != nil {
			return identity.Config{}, err
		}
		cfg.APIResources = append(cfg.APIResources, ir)
	}
	return cfg, nil
}

// KeyPolicy checks the app's signing_keys and converts them into the
// identity server's key policy, reading the key encryption key from the
// environment variable or file they name. Its retention is left zero (see
// identity.KeyRetention).
func (a *App) KeyPolicy() (keys.Policy, error) {
	pol, err := a.SigningKeys.keyPolicy()
	if err != nil {
		return keys.Policy{}, err
	}
	return pol, pol.Validate()
}

// RefreshToken is a refresh-token policy.
type RefreshToken struct {
	// Grace is how long after a rotation the same parent token, sent again
	// by the same client before its successor was used, gets the same
	// successor instead of revoking the token family (a concurrent refresh
	// by two tabs or a retried request). Default 5s. A negative value
	// disables the window. A longer window gives a replayed stolen token
	// more time.
	Grace caddy.Duration `json:"grace,omitempty"`

	// SlidingLifetime is how long a refresh token stays valid unused; each
	// refresh issues one valid this long again, never past the absolute
	// lifetime. Default 15 days.
	SlidingLifetime caddy.Duration `json:"sliding_lifetime,omitempty"`

	// AbsoluteLifetime is how long a token family lives from the original
	// login, however often it is refreshed: after it the user logs in
	// again. Default 30 days.
	AbsoluteLifetime caddy.Duration `json:"absolute_lifetime,omitempty"`

	// MaxPerUser is the most refresh tokens (token families) one user
	// holds with one client at once. A grant past it removes the user's
	// oldest with that client: its refresh token then fails with
	// invalid_grant, and the access tokens issued from it run to their
	// expiry. It bounds the store however often a user signs in (each
	// grant with offline_access starts a family). Default 100, at most
	// 10000.
	MaxPerUser int `json:"max_per_user,omitempty"`
}

// policy converts r; nil is the zero policy (all defaults).
func (r *RefreshToken) policy() clients.RefreshPolicy {
	if r == nil {
		return clients.RefreshPolicy{}
	}
	return clients.RefreshPolicy{
		Grace:            time.Duration(r.Grace),
		SlidingLifetime:  time.Duration(r.SlidingLifetime),
		AbsoluteLifetime: time.Duration(r.AbsoluteLifetime),
		MaxPerUser:       r.MaxPerUser,
	}
}

// APIResource is an API that may call the introspection endpoint for the
// access tokens issued for it, as IdentityServer's API resources do.
type APIResource struct {
	// Name is the audience of the API's tokens and the name it logs in
	// with (client_secret_basic or client_secret_post). Required, unique,
	// and not the id of a client. It sees only tokens whose "aud" holds it.
	Name string `json:"name,omitempty"`

	// SecretSHA256 are the SHA-256 digests of the API's secrets, in the
	// forms of a client's secret_sha256; several allow a rotation. At least
	// one is required. Generate secrets with `gatehouse client secret`.
	SecretSHA256 []string `json:"secret_sha256,omitempty"`
}

// identityResource converts r.
func (r *APIResource) identityResource() (clients.APIResource, error) {
	hashes, err := parseDigests(r.SecretSHA256)
	if err != nil {
		return clients.APIResource{}, fmt.Errorf("api_resource %q: secret_sha256: %w", r.Name, err)
	}
	return clients.APIResource{Name: r.Name, SecretHashes: hashes}, nil
}

// Lockout is the brute-force defence of the password grant. A (user, source)
// pair is locked out after max_failures failed logins inside window, for
// duration; beyond throttle_after failures per source or per user, every
// later attempt of that source or user waits (base_delay, doubling up to
// max_delay), so a stranger can slow a user's logins but never lock the
// user out. The source is Caddy's client IP, which honours the server's
// trusted_proxies; IPv6 addresses count by their /64. Locked, unknown and
// wrong-password answers are the same.
type Lockout struct {
	// MaxFailures is how many failures lock a (user, source) pair. Default
	// 5. Negative (Caddyfile: "lockout off") disables lockout and
	// throttling: then only the password hash's cost slows guessing.
	MaxFailures int `json:"max_failures,omitempty"`

	// Duration is how long a lockout lasts. Default 15m.
	Duration caddy.Duration `json:"duration,omitempty"`

	// Window is how long failures are remembered. Default 15m.
	Window caddy.Duration `json:"window,omitempty"`

	// ThrottleAfter is how many failures per source or per user pass
	// without delay. Default 3.
	ThrottleAfter int `json:"throttle_after,omitempty"`

	// BaseDelay is the delay after the first failure past throttle_after;
	// each further failure doubles it. Default 250ms.
	BaseDelay caddy.Duration `json:"base_delay,omitempty"`

	// MaxDelay caps the delay. Default 3s.
	MaxDelay caddy.Duration `json:"max_delay,omitempty"`
}

// policy converts l; nil is the default policy.
func (l *Lockout) policy() users.LockoutPolicy {
	if l == nil {
		return users.LockoutPolicy{}
	}
	return users.LockoutPolicy{
		MaxFailures:   l.MaxFailures,
		Duration:      time.Duration(l.Duration),
		Window:        time.Duration(l.Window),
		ThrottleAfter: l.ThrottleAfter,
		BaseDelay:     time.Duration(l.BaseDelay),
		MaxDelay:      time.Duration(l.MaxDelay),
	}
}

// SecondFactor is the step-up policy: which scopes a user's token carries
// only after the sign-in passed a second factor (a TOTP code, a recovery
// code or a passkey), and the name of the TOTP factors.
type SecondFactor struct {
	// Scopes need a second factor, e.g. the scopes that place orders. A
	// sign-in with a password alone gets the user's other scopes and not
	// these; asking for one at the authorization endpoint asks the user
	// for a second factor first (a step-up). The password grant cannot
	// obtain them, and a refresh token keeps them only if its sign-in
	// passed a second factor. Client credentials are not subject to
	// them. Each must be a published scope. Default: none.
	Scopes []string `json:"scopes,omitempty"`

	// TOTPIssuer is the name authenticator apps show beside a TOTP
	// factor (the issuer of its otpauth URI). Default: the issuer URL's
	// host.
	TOTPIssuer string `json:"totp_issuer,omitempty"`
}

func (f *SecondFactor) scopes() []string {
	if f == nil {
		return nil
	}
	return f.Scopes
}

func (f *SecondFactor) totpIssuer() string {
	if f == nil {
		return ""
	}
	return f.TOTPIssuer
}

// SigningKeys is the signing-key lifecycle: a new key is announced (published
// in the key set) before it signs, signs for a period, then stays published
// after it retires until every token it signed has expired. Every instance
// sharing the store follows the same schedule.
type SigningKeys struct {
	// Period is how long a key signs before its successor takes over.
	// Default 720h (30 days). Negative (Caddyfile: "off"): no automatic
	// rotation; a key signs until `gatehouse keys rotate`.
	Period caddy.Duration `json:"period,omitempty"`

	// Announce is how long a new key is published before it signs, so that
	// verifiers caching the key set know it in time. Default 24h; must be
	// shorter than the period.
	Announce caddy.Duration `json:"announce,omitempty"`

	// CheckInterval is how often each instance re-reads the keys from the
	// store and applies the schedule; a rotation made with `gatehouse keys
	// rotate` reaches running servers within it. Default 1m.
	CheckInterval caddy.Duration `json:"check_interval,omitempty"`

	// Bits is the RSA modulus size of new keys, at least 2048. Default
	// 2048.
	Bits int `json:"bits,omitempty"`

	// Algorithms are the algorithms the server keeps signing keys for:
	// RS256, ES256 (ECDSA on P-256) and EdDSA (Ed25519), each with one
	// signing key at a time on the schedule above, published with its
	// "alg" in the JWKS and listed in the discovery document's
	// id_token_signing_alg_values_supported. The first signs the tokens
	// of clients that name no algorithm (access_token_signing_alg,
	// id_token_signed_response_alg). Default ["RS256"]. An ES256 or EdDSA
	// signature costs a small fraction of an RS256 one; a resource that
	// checks the tokens must accept the algorithm.
	Algorithms []string `json:"algorithms,omitempty"`

	// EncryptionKeyEnv names the environment variable that holds the key
	// encryption key: 32 bytes as 64 hex digits or base64 (standard or
	// URL alphabet, padded or not). When a key encryption key is given,
	// new private keys are stored encrypted with AES-256-GCM (keys stored
	// in the clear still load). Default: none (private keys stored in the
	// clear). Losing the key makes the stored signing keys unusable. The
	// key itself never goes into the configuration.
	EncryptionKeyEnv string `json:"encryption_key_env,omitempty"`

	// EncryptionKeyFile is the path of a file that holds the key
	// encryption key, in the same forms as EncryptionKeyEnv (surrounding
	// whitespace is ignored). Keep it readable by the server only. Excludes
	// EncryptionKeyEnv. Default: none.
	EncryptionKeyFile string `json:"encryption_key_file,omitempty"`
}

// keyPolicy converts k, reading the key encryption key; nil is the default
// policy. The retention is left for identity to compute.
func (k *SigningKeys) keyPolicy() (keys.Policy, error) {
	if k == nil {
		return keys.Policy{}, nil
	}
	if k.EncryptionKeyEnv != "" && k.EncryptionKeyFile != "" {
		return keys.Policy{}, fmt.Errorf("signing_keys: encryption_key_env and encryption_key_file exclude each other")
	}
	kek, err := k.encryptionKey()
	if err != nil {
		return keys.Policy{}, err
	}
	return keys.Policy{
		Period:        time.Duration(k.Period),
		Announce:      time.Duration(k.Announce),
		CheckInterval: time.Duration(k.CheckInterval),
		Bits:          k.Bits,
		Algorithms:    k.Algorithms,
		EncryptionKey: kek,
	}, nil
}

// EffectiveAnnounce is how long a new key is published before it signs:
// Announce, or its default. k may be nil (all defaults).
func (k *SigningKeys) EffectiveAnnounce() time.Duration {
	if k == nil || k.Announce <= 0 {
		return keys.DefaultAnnounce
	}
	return time.Duration(k.Announce)
}

// EffectiveCheckInterval is how often the servers re-read the keys:
// CheckInterval, or its default. k may be nil (all defaults).
func (k *SigningKeys) EffectiveCheckInterval() time.Duration {
	if k == nil || k.CheckInterval <= 0 {
		return keys.DefaultCheckInterval
	}
	return time.Duration(k.CheckInterval)
}

// VerifierConfig configures the app's access-token check: the one that
// gatehouse_auth uses to protect routes. Every check pins the algorithms,
// the "typ", the issuer and the audience, requires "exp", and takes keys
// only from the configured key set, never from the token.
type VerifierConfig struct {
	// Issuer is the "iss" tokens must carry. Default: the app's issuer.
	// Required when the app has no issuer (remote-only mode).
	Issuer string `json:"issuer,omitempty"`

	// Audience is the audience "aud" must contain. Default: the app's
	// audience ("gatehouse" unless set).
	Audience string `json:"audience,omitempty"`

	// JWKSURL is the URL of the key set of another issuer (remote mode):
	// its keys are fetched, cached, refreshed every 5 minutes and when a
	// token names a key id not seen yet (at most every 5 seconds). Default:
	// none, the keys of the app's own identity server, read in-process with
	// no HTTP hop. Use https outside a loopback or private network: whoever
	// can change the key set can forge tokens.
	JWKSURL string `json:"jwks_url,omitempty"`

	// Algorithms are the accepted "alg" values; only asymmetric ones (RS,
	// PS, ES, EdDSA) may be named, never "none" or HMAC. Whatever they
	// are, a token's "alg" must fit the type of the key its "kid" names
	// and the "alg" that key is declared for (the identity server's own
	// keys; a remote JWKS entry's "alg"). Default: each key's declared
	// "alg", and RS256 for a remote key that declares none (name ES256 or
	// EdDSA here to accept such keys of those types).
	Algorithms []string `json:"algorithms,omitempty"`

	// Types are the accepted "typ" header values (compared
	// case-insensitively, an "application/" prefix allowed). Default
	// ["at+jwt"] (RFC 9068). Accepting "JWT" lets ID tokens pass as access
	// tokens.
	Types []string `json:"types,omitempty"`

	// Leeway is the clock skew allowed on exp, nbf and iat, at most 5m.
	// Default 10s.
	Leeway caddy.Duration `json:"leeway,omitempty"`

	// CacheSize bounds the cache of verified tokens, in entries. Default
	// 10000; negative disables the cache.
	CacheSize int `json:"cache_size,omitempty"`

	// CheckRevocations refuses tokens revoked through the revocation
	// endpoint (or by a refresh-token replay), read from the app's store
	// every 5 seconds. Default true for the app's own tokens, false in
	// remote mode, where it reads this app's store: enable it only when
	// that store is the one the remote issuer writes (a shared store).
	CheckRevocations *bool `json:"check_revocations,omitempty"`
}

// remote reports whether v reads a remote key set.
func (v *VerifierConfig) remote() bool { return v != nil && v.JWKSURL != "" }

// checksRevocations reports whether v applies revocations.
func (v *VerifierConfig) checksRevocations() bool {
	if v != nil && v.CheckRevocations != nil {
		return *v.CheckRevocations
	}
	return !v.remote()
}

// custom reports whether v asks for a check other than the identity
// server's own (its issuer and audience, the defaults, revocations).
func (v *VerifierConfig) custom(issuer, audience string) bool {
	if v == nil {
		return false
	}
	return v.remote() || (v.Issuer != "" && v.Issuer != issuer) || (v.Audience != "" && v.Audience != audience) ||
		len(v.Algorithms) > 0 || len(v.Types) > 0 || v.Leeway != 0 || v.CacheSize != 0 || !v.checksRevocations()
}

// verifyConfig converts v into the verifier's configuration for an app
// with this issuer and audience, which apply unless v names others. The
// key set, the revocations and the logger are left to the caller.
func (v *VerifierConfig) verifyConfig(issuer, audience string) verify.Config {
	cfg := verify.Config{Issuer: issuer, Audience: audience}
	if v == nil {
		return cfg
	}
	if v.Issuer != "" {
		cfg.Issuer = v.Issuer
	}
	if v.Audience != "" {
		cfg.Audience = v.Audience
	}
	cfg.Algorithms, cfg.Types = v.Algorithms, v.Types
	cfg.Leeway, cfg.CacheSize = time.Duration(v.Leeway), v.CacheSize
	return cfg
}
