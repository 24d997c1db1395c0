package keys

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/store"
)

// Audit keys sign the audit's checkpoints (docs/audit.md). They are their
// own kind: stored apart from the signing keys, always Ed25519 (EdDSA),
// their ids prefixed AuditKeyPrefix, and never removed,
// so that a log of any age can be verified.
const (
	AuditKeyPrefix     = "audit-"
	AuditAlgorithm     = "EdDSA"
	DefaultAuditPeriod = 90 * 24 * time.Hour
)

// AuditPolicy is the audit keys' schedule: a key signs for Period, then a
// new one takes over at once (a checkpoint is verified offline, against
// every key ever stored, so nothing needs a key announced before it
// signs). Every instance sharing the store follows it.
type AuditPolicy struct {
	// Period is how long an audit key signs. Default 90 days; negative:
	// no automatic rotation.
	Period time.Duration
	// CheckInterval is how often the keys are re-read and the schedule
	// applied. Default 1m.
	CheckInterval time.Duration
	// EncryptionKey, when set (32 bytes), seals new private keys at rest
	// with AES-256-GCM, as signing keys are sealed.
	EncryptionKey []byte
}

// Validate checks p; zero fields take defaults.
func (p AuditPolicy) Validate() error {
	if p.CheckInterval < 0 {
		return errors.New("audit key check interval must not be negative")
	}
	if p.EncryptionKey != nil && len(p.EncryptionKey) != EncryptionKeySize {
		return fmt.Errorf("the key encryption key must be %d bytes", EncryptionKeySize)
	}
	return nil
}

// AuditKeys applies an AuditPolicy to the audit keys in the store and
// signs checkpoints with the key that signs now. It implements the
// audit package's Signer: KeyID names the current key, and Sign signs
// with the key the JWS header names, so a rotation between the two never
// yields a checkpoint signed by another key than its kid says.
type AuditKeys struct {
	st  store.Audit
	pol AuditPolicy
	log *zap.Logger

	sync    sync.Mutex // one schedule pass at a time in this process
	mu      sync.RWMutex
	current string                        // the key that signs; "" before the first Sync
	opened  map[string]ed25519.PrivateKey // the keys opened so far, by id
}

// NewAuditKeys checks pol and returns the audit keys of st, none opened:
// call Sync before signing.
func NewAuditKeys(st store.Audit, pol AuditPolicy, log *zap.Logger) (*AuditKeys, error) {
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	if pol.Period == 0 {
		pol.Period = DefaultAuditPeriod
	}
	if pol.CheckInterval == 0 {
		pol.CheckInterval = DefaultCheckInterval
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &AuditKeys{st: st, pol: pol, log: log, opened: map[string]ed25519.PrivateKey{}}, nil
}

// signsAt reports whether k signs at t.
func auditSignsAt(k store.AuditKey, t time.Time) bool {
	return !t.Before(k.SignFrom) && (k.RetireAt.IsZero() || t.Before(k.RetireAt))
}

// Sync re-reads the audit keys and applies the schedule at now: when no
// key signs (the first start, or the signing key's period ended), a new
// one is generated, sealed and stored, and signs at once.
func (a *AuditKeys) Sync(ctx context.Context, now time.Time) error {
	a.sync.Lock()
	defer a.sync.Unlock()
	stored, err := a.st.AuditKeys(ctx)
	if err != nil {
		return fmt.Errorf("loading audit keys: %w", err)
	}
	var signing *store.AuditKey
	for i, k := range stored {
		// Of the keys that sign now, the one that began last (then by
		// id), so that every instance picks the same.
		if auditSignsAt(k, now) && (signing == nil || k.SignFrom.After(signing.SignFrom) ||
			k.SignFrom.Equal(signing.SignFrom) && k.ID > signing.ID) {
			signing = &stored[i]
		}
	}
	if signing == nil {
		k, err := a.create(ctx, now)
		if err != nil {
			return err
		}
		signing = &k
	}
	return a.use(*signing)
}

// Rotate makes a new audit key sign from now and retires the others that
// sign, for `gatehouse audit` tooling and tests. It returns the new id.
func (a *AuditKeys) Rotate(ctx context.Context, now time.Time) (string, error) {
	a.sync.Lock()
	defer a.sync.Unlock()
	stored, err := a.st.AuditKeys(ctx)
	if err != nil {
		return "", fmt.Errorf("loading audit keys: %w", err)
	}
	k, err := a.create(ctx, now)
	if err != nil {
		return "", err
	}
	if err := a.use(k); err != nil {
		return "", err
	}
	for _, old := range stored {
		if auditSignsAt(old, now) {
			if err := a.st.RetireAuditKey(ctx, old.ID, now); err != nil {
				return "", err
			}
		}
	}
	return k.ID, nil
}

// create generates, seals and stores a key that signs from now.
func (a *AuditKeys) create(ctx context.Context, now time.Time) (store.AuditKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return store.AuditKey{}, fmt.Errorf("generating audit key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return store.AuditKey{}, fmt.Errorf("encoding audit key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return store.AuditKey{}, fmt.Errorf("encoding audit key: %w", err)
	}
	k := store.AuditKey{ID: AuditKeyPrefix + okpThumbprint(pub), Algorithm: AuditAlgorithm, Public: pubDER,
		Created: now, SignFrom: now}
	if a.pol.Period > 0 {
		k.RetireAt = now.Add(a.pol.Period)
	}
	if k.Private, err = sealKey(a.pol.EncryptionKey, der, k.ID); err != nil {
		return store.AuditKey{}, fmt.Errorf("encrypting audit key: %w", err)
	}
	if err := a.st.AddAuditKey(ctx, k); err != nil {
		return store.AuditKey{}, fmt.Errorf("storing audit key %q: %w", k.ID, err)
	}
	a.log.Info("audit key created", zap.String("kid", k.ID), zap.Time("retire_at", k.RetireAt))
	return k, nil
}

// use opens k if it is not open yet and makes it the signing key.
func (a *AuditKeys) use(k store.AuditKey) error {
	a.mu.RLock()
	_, ok := a.opened[k.ID]
	a.mu.RUnlock()
	var priv ed25519.PrivateKey
	if !ok {
		if k.Algorithm != AuditAlgorithm {
			return fmt.Errorf("audit key %q: unsupported algorithm %q", k.ID, k.Algorithm)
		}
		der, err := openKey(a.pol.EncryptionKey, k.Private, k.ID)
		if err != nil {
			return fmt.Errorf("opening audit key: %w", err)
		}
		parsed, err := x509.ParsePKCS8PrivateKey(der)
		if err != nil {
			return fmt.Errorf("parsing audit key %q: %w", k.ID, err)
		}
		if priv, ok = parsed.(ed25519.PrivateKey); !ok {
			return fmt.Errorf("audit key %q is not an Ed25519 key", k.ID)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if priv != nil {
		a.opened[k.ID] = priv
	}
	a.current = k.ID
	return nil
}

// Run re-applies the schedule every CheckInterval until ctx ends.
func (a *AuditKeys) Run(ctx context.Context, now func() time.Time) {
	runSchedule(ctx, a.pol.CheckInterval, now, a.Sync, "identity.keys.audit", "applying the audit-key schedule", a.log)
}

// KeyID is the id of the key that signs now ("" before the first Sync).
func (a *AuditKeys) KeyID() string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.current
}

// Algorithm is the JWS "alg" of every audit key.
func (a *AuditKeys) Algorithm() string { return AuditAlgorithm }

// Sign signs a JWS signing input with the audit key its header's kid
// names, which must be one this process opened.
func (a *AuditKeys) Sign(signingInput string) ([]byte, error) {
	kid, err := headerKeyID(signingInput)
	if err != nil {
		return nil, err
	}
	a.mu.RLock()
	priv, ok := a.opened[kid]
	a.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("audit key %.80q is not open", kid)
	}
	return ed25519.Sign(priv, []byte(signingInput)), nil
}

// headerKeyID is the kid of a JWS signing input's header.
func headerKeyID(signingInput string) (string, error) {
	seg, _, ok := strings.Cut(signingInput, ".")
	if !ok {
		return "", errors.New("not a JWS signing input")
	}
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return "", fmt.Errorf("JWS header: %w", err)
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return "", fmt.Errorf("JWS header: %w", err)
	}
	return h.Kid, nil
}

// AuditPublicKeys returns the public keys of every audit key ever stored,
// by id, for verifying checkpoints. It opens no private key and needs no
// key encryption key. A key whose id is not its own thumbprint is an
// error: the store was edited.
func AuditPublicKeys(ctx context.Context, st store.Audit) (map[string]crypto.PublicKey, error) {
	stored, err := st.AuditKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading audit keys: %w", err)
	}
	out := make(map[string]crypto.PublicKey, len(stored))
	for _, k := range stored {
		pub, err := x509.ParsePKIXPublicKey(k.Public)
		if err != nil {
			return nil, fmt.Errorf("parsing the public audit key %q: %w", k.ID, err)
		}
		ed, ok := pub.(ed25519.PublicKey)
		if !ok || k.Algorithm != AuditAlgorithm {
			return nil, fmt.Errorf("audit key %q is not an Ed25519 key", k.ID)
		}
		if k.ID != AuditKeyPrefix+okpThumbprint(ed) {
			return nil, fmt.Errorf("audit key %q is not the key its id names", k.ID)
		}
		out[k.ID] = ed
	}
	return out, nil
}

// AuditJWK is one public audit key of a JWK Set (RFC 7517, RFC 8037).
type AuditJWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// AuditJWKS returns every audit public key ever stored as a JWK Set,
// ordered by id, for `gatehouse audit keys`.
func AuditJWKS(ctx context.Context, st store.Audit) ([]byte, error) {
	pubs, err := AuditPublicKeys(ctx, st)
	if err != nil {
		return nil, err
	}
	set := struct {
		Keys []AuditJWK `json:"keys"`
	}{Keys: []AuditJWK{}}
	for _, kid := range slices.Sorted(maps.Keys(pubs)) {
		x := base64.RawURLEncoding.EncodeToString(pubs[kid].(ed25519.PublicKey))
		set.Keys = append(set.Keys, AuditJWK{Kty: "OKP", Crv: "Ed25519", X: x, Kid: kid, Alg: AuditAlgorithm, Use: "sig"})
	}
	return json.MarshalIndent(set, "", "  ")
}

// okpThumbprint is the RFC 7638 thumbprint of an Ed25519 public key
// (RFC 8037 §2: members crv, kty, x).
func okpThumbprint(pub ed25519.PublicKey) string {
	canonical := fmt.Sprintf(`{"crv":"Ed25519","kty":"OKP","x":%q}`, base64.RawURLEncoding.EncodeToString(pub))
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
