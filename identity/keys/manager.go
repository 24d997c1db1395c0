package keys

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"

	"github.com/gatehouse/gatehouse/identity/store"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// Defaults of Policy.
const (
	DefaultPeriod        = 30 * 24 * time.Hour
	DefaultAnnounce      = 24 * time.Hour
	DefaultCheckInterval = time.Minute
	DefaultBits          = 2048
	// DefaultRetention is how long a retired key stays published when the
	// token lifetimes are unknown (the CLI without a config): comfortably
	// longer than the default token lifetimes.
	DefaultRetention = 2 * time.Hour
)

// Bounds of Policy.Bits.
const (
	MinBits = 2048
	MaxBits = 8192
)

// Policy is the signing-key lifecycle: announce -> sign -> retire ->
// remove, shared by every instance through the store.
type Policy struct {
	// Period is how long a key signs before its successor takes over.
	// Default 30 days (720h); negative: no automatic rotation (a key
	// signs until `gatehouse keys rotate`).
	Period time.Duration
	// Announce is how long a new key is published in the JWKS before it
	// signs anything, so verifiers that cache the key set know it in
	// time. Default 24h; must be shorter than Period.
	Announce time.Duration
	// CheckInterval is how often the keys are re-read from the store and
	// the schedule applied. Default 1m.
	CheckInterval time.Duration
	// EncryptionKey, when set (32 bytes), encrypts private keys at rest
	// with AES-256-GCM. Keys stored in the clear still load. Losing it
	// makes the stored keys unusable.
	EncryptionKey []byte
	// Bits is the RSA modulus size of new keys. Default 2048.
	Bits int
	// Algorithms are the algorithms the server keeps signing keys for,
	// one signing key each at a time, each with its own schedule: RS256,
	// ES256 (ECDSA on P-256) and EdDSA (Ed25519). The first signs tokens
	// of clients that name no algorithm. Default [RS256].
	Algorithms []string
	// Retention is how long a retired key stays published: at least the
	// longest token lifetime plus leeway. The identity server computes it
	// from its token lifetimes (see identity.KeyRetention). Default
	// DefaultRetention.
	Retention time.Duration
}

// Validate checks p; zero fields take defaults.
func (p Policy) Validate() error {
	if p.Announce < 0 || p.CheckInterval < 0 || p.Retention < 0 {
		return errors.New("signing-key durations must not be negative")
	}
	period, announce := p.Period, p.Announce
	if period == 0 {
		period = DefaultPeriod
	}
	if announce == 0 {
		announce = DefaultAnnounce
	}
	if period > 0 && announce >= period {
		return fmt.Errorf("key announce time %v must be shorter than the key period %v", announce, period)
	}
	if p.Bits != 0 && (p.Bits < MinBits || p.Bits > MaxBits) {
		return fmt.Errorf("signing keys must have %d to %d bits, got %d", MinBits, MaxBits, p.Bits)
	}
	if p.EncryptionKey != nil && len(p.EncryptionKey) != EncryptionKeySize {
		return fmt.Errorf("the key encryption key must be %d bytes", EncryptionKeySize)
	}
	for i, alg := range p.Algorithms {
		if !Supported(alg) {
			return fmt.Errorf("signing algorithm %q is not supported: only %s are", alg, strings.Join(Algorithms, ", "))
		}
		if slices.Contains(p.Algorithms[:i], alg) {
			return fmt.Errorf("signing algorithm %q is named twice", alg)
		}
	}
	return nil
}

// WithDefaults returns p with its zero fields set to the defaults.
func (p Policy) WithDefaults() Policy {
	if p.Period == 0 {
		p.Period = DefaultPeriod
	}
	if p.Announce <= 0 {
		p.Announce = DefaultAnnounce
	}
	if p.CheckInterval <= 0 {
		p.CheckInterval = DefaultCheckInterval
	}
	if p.Bits == 0 {
		p.Bits = DefaultBits
	}
	if p.Retention <= 0 {
		p.Retention = DefaultRetention
	}
	if len(p.Algorithms) == 0 {
		p.Algorithms = []string{DefaultAlgorithm}
	}
	return p
}

// Signs reports whether the policy keeps signing keys for alg.
func (p Policy) Signs(alg string) bool {
	return slices.Contains(p.WithDefaults().Algorithms, alg)
}

// Manager applies a Policy to the keys in the store and holds the keys
// loaded from it. It is safe for concurrent use: signing and publishing
// read the key set under its lock; schedule passes (Sync, Rotate, the Run
// loop) take mu, one at a time in this process.
type Manager struct {
	st   store.Keys
	pol  Policy
	keys keySet
	log  *zap.Logger
	rec  Auditor    // the audit's key_rotation records (audit.go); nil for none
	mu   sync.Mutex // one schedule pass at a time in this process
}

// NewManager checks pol and returns a manager with no keys loaded: call
// Sync before signing.
func NewManager(st store.Keys, pol Policy, log *zap.Logger) (*Manager, error) {
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Manager{st: st, pol: pol.WithDefaults(), log: log}, nil
}

// Policy is the manager's policy, defaults applied.
func (m *Manager) Policy() Policy { return m.pol }

func (m *Manager) load(ctx context.Context) ([]*signingKey, error) {
	stored, err := m.st.SigningKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading signing keys: %w", err)
	}
	loaded := map[string]*signingKey{}
	for _, k := range m.keys.all() {
		loaded[k.id] = k
	}
	keys := make([]*signingKey, 0, len(stored))
	for _, sk := range stored {
		if old, ok := loaded[sk.ID]; ok && old.alg == sk.Algorithm {
			// The material never changes: keep the loaded key, so the
			// verifier's cached tokens stay valid across syncs.
			keys = append(keys, &signingKey{id: sk.ID, alg: old.alg, private: old.private, public: old.public,
				created: sk.Created, signFrom: sk.SignFrom, retireAt: sk.RetireAt, removeAt: sk.RemoveAt})
			continue
		}
		k, err := parseStoredKey(sk, m.pol.EncryptionKey)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	slices.SortStableFunc(keys, compareKeys)
	return keys, nil
}

func (m *Manager) retireAfter(start time.Time) (retire, remove time.Time) {
	if m.pol.Period < 0 {
		return time.Time{}, time.Time{}
	}
	retire = start.Add(m.pol.Period)
	return retire, retire.Add(m.pol.Retention)
}

// Sync re-reads the keys and applies the schedule at now: removes keys
// past their removal, makes sure a key signs now, announces the successor
// Announce before the signing key retires, and keeps retired keys
// published for Retention.
func (m *Manager) Sync(ctx context.Context, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys, err := m.load(ctx)
	if err != nil {
		return err
	}
	live := keys[:0]
	for _, k := range keys {
		if !k.removeAt.IsZero() && !now.Before(k.removeAt) {
			if err := m.st.DeleteSigningKey(ctx, k.id); err != nil && !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("removing signing key %q: %w", k.id, err)
			}
			m.log.Info("signing key removed", zap.String("kid", k.id))
			m.record(k.id, keyRemoved)
			continue
		}
		if !slices.Contains(m.pol.Algorithms, k.alg) && (k.retireAt.IsZero() || k.retireAt.After(now)) {
			// An algorithm the configuration no longer keeps: its keys
			// retire now and leave the key set after Retention, as a
			// rotation's old key does (with no automatic rotation they
			// would otherwise sign and be published for good).
			k.retireAt, k.removeAt = now, now.Add(m.pol.Retention)
			if !k.signFrom.Before(now) {
				k.signFrom = now
			}
			if err := m.update(ctx, k); err != nil {
				return err
			}
			m.log.Info("signing key retired: its algorithm is no longer kept", zap.String("kid", k.id), zap.String("alg", k.alg),
				zap.Time("remove_at", k.removeAt))
		}
		if !k.retireAt.IsZero() && k.removeAt.Before(k.retireAt.Add(m.pol.Retention)) {
			k.removeAt = k.retireAt.Add(m.pol.Retention) // token lifetimes grew
			if err := m.update(ctx, k); err != nil {
				return err
			}
		}
		live = append(live, k)
	}
	keys = live
	for _, alg := range m.pol.Algorithms {
		added, err := m.schedule(ctx, now, alg, keys)
		if err != nil {
			return err
		}
		keys = append(keys, added...)
	}
	slices.SortStableFunc(keys, compareKeys)
	m.keys.replace(keys)
	return nil
}

// schedule applies the schedule of alg's keys (those of keys with alg) at
// now: a key must sign now, and the successor of the signing key is
// announced Announce before it retires. It returns the keys it added.
func (m *Manager) schedule(ctx context.Context, now time.Time, alg string, keys []*signingKey) ([]*signingKey, error) {
	signs := slices.ContainsFunc(keys, func(k *signingKey) bool { return k.alg == alg && k.signsAt(now) })
	switch {
	case !signs:
		// First start, or every key retired while no instance ran: a key
		// must sign at once.
		retire, remove := m.retireAfter(now)
		k, err := newKey(ctx, m.st, m.pol.EncryptionKey, alg, m.pol.Bits, now, now, retire, remove)
		if err != nil {
			return nil, err
		}
		m.log.Info("signing key created", zap.String("kid", k.id), zap.String("alg", alg), zap.Time("retire_at", retire))
		m.record(k.id, keyCreated)
		return []*signingKey{k}, nil
	case m.pol.Period > 0:
		// The successor follows the key that signs last into the future;
		// a retired key is never extended.
		var latest *signingKey
		for _, k := range keys {
			if k.alg == alg && (k.retireAt.IsZero() || k.retireAt.After(now)) && (latest == nil || compareKeys(latest, k) < 0) {
				latest = k
			}
		}
		if latest == nil || latest.retireAt.IsZero() || latest.retireAt.Sub(now) > m.pol.Announce {
			return nil, nil
		}
		start := latest.retireAt
		if announced := now.Add(m.pol.Announce); start.Before(announced) {
			// Late (no instance ran in time): the signing key signs on
			// until its successor has been published for Announce.
			start = announced
			latest.retireAt, latest.removeAt = start, start.Add(m.pol.Retention)
			if err := m.update(ctx, latest); err != nil {
				return nil, err
			}
		}
		retire, remove := m.retireAfter(start)
		k, err := newKey(ctx, m.st, m.pol.EncryptionKey, alg, m.pol.Bits, now, start, retire, remove)
		if err != nil {
			return nil, err
		}
		m.log.Info("signing key announced", zap.String("kid", k.id), zap.String("alg", alg), zap.Time("sign_from", start))
		m.record(k.id, keyAnnounced)
		return []*signingKey{k}, nil
	}
	return nil, nil
}

func (m *Manager) update(ctx context.Context, k *signingKey) error {
	err := m.st.UpdateSigningKey(ctx, store.SigningKey{ID: k.id, Algorithm: k.alg, Created: k.created,
		SignFrom: k.signFrom, RetireAt: k.retireAt, RemoveAt: k.removeAt})
	if err != nil {
		return fmt.Errorf("rescheduling signing key %q: %w", k.id, err)
	}
	return nil
}

// Rotate forces a rotation of alg's key at now: a new key signs from
// now+Announce (or at once when immediately is set), the signing key of
// alg retires then and stays published for Retention, and alg keys
// announced but not yet signing are dropped. Keys of other algorithms are
// left as they are. It returns the new key's id.
func (m *Manager) Rotate(ctx context.Context, alg string, now time.Time, immediately bool) (string, error) {
	return m.rotate(ctx, alg, now, immediately, false)
}

// RotateRevoking is Rotate at once, for a key that may be compromised:
// every other key of alg is removed from the store too, so the tokens
// they signed stop verifying as soon as each server reloads its keys
// (Sync, every CheckInterval), cached ones included. It returns the new
// key's id.
func (m *Manager) RotateRevoking(ctx context.Context, alg string, now time.Time) (string, error) {
	return m.rotate(ctx, alg, now, true, true)
}

// rotate is Rotate; with revoke, RotateRevoking.
func (m *Manager) rotate(ctx context.Context, alg string, now time.Time, immediately, revoke bool) (string, error) {
	if !slices.Contains(m.pol.Algorithms, alg) {
		return "", fmt.Errorf("no signing keys are kept for %q (the algorithms are %s)", alg, strings.Join(m.pol.Algorithms, ", "))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	keys, err := m.load(ctx)
	if err != nil {
		return "", err
	}
	if revoke {
		// The successor first: a failure leaves the old keys signing.
		retire, remove := m.retireAfter(now)
		k, err := newKey(ctx, m.st, m.pol.EncryptionKey, alg, m.pol.Bits, now, now, retire, remove)
		if err != nil {
			return "", err
		}
		others := slices.DeleteFunc(slices.Clone(keys), func(o *signingKey) bool { return o.alg == alg })
		m.keys.replace(append(others, k))
		for _, old := range keys {
			if old.alg != alg {
				continue
			}
			if err := m.st.DeleteSigningKey(ctx, old.id); err != nil && !errors.Is(err, store.ErrNotFound) {
				return "", fmt.Errorf("removing key %q: %w", old.id, err)
			}
			m.log.Warn("signing key removed at once", zap.String("kid", old.id), zap.String("alg", alg))
			m.record(old.id, keyRemoved)
		}
		m.log.Info("signing key rotated", zap.String("kid", k.id), zap.String("alg", alg), zap.Time("sign_from", now), zap.Bool("revoking", true))
		m.record(k.id, keyRotated, audit.Bool("revoking", true))
		return k.id, nil
	}
	start := now.Add(m.pol.Announce)
	if immediately {
		start = now
	}
	var live []*signingKey
	for _, k := range keys {
		switch {
		case k.alg != alg:
		case k.signFrom.After(now):
			if err := m.st.DeleteSigningKey(ctx, k.id); err != nil && !errors.Is(err, store.ErrNotFound) {
				return "", fmt.Errorf("dropping announced key %q: %w", k.id, err)
			}
			m.record(k.id, keyRemoved)
			continue
		case k.retireAt.IsZero() || k.retireAt.After(start):
			k.retireAt, k.removeAt = start, start.Add(m.pol.Retention)
			if err := m.update(ctx, k); err != nil {
				return "", err
			}
		}
		live = append(live, k)
	}
	retire, remove := m.retireAfter(start)
	k, err := newKey(ctx, m.st, m.pol.EncryptionKey, alg, m.pol.Bits, now, start, retire, remove)
	if err != nil {
		return "", err
	}
	m.log.Info("signing key rotated", zap.String("kid", k.id), zap.String("alg", alg), zap.Time("sign_from", start), zap.Bool("immediately", immediately))
	m.record(k.id, keyRotated, audit.Bool("immediately", immediately))
	live = append(live, k)
	slices.SortStableFunc(live, compareKeys)
	m.keys.replace(live)
	return k.id, nil
}

// Run re-applies the schedule every CheckInterval until ctx ends.
func (m *Manager) Run(ctx context.Context, now func() time.Time) {
	runSchedule(ctx, m.pol.CheckInterval, now, m.Sync, "identity.keys", "applying the signing-key schedule", m.log)
}

// runSchedule calls sync every interval until ctx ends, logging its
// failures as what; point is its fault point for tests. The signing keys'
// and the audit keys' loops.
func runSchedule(ctx context.Context, interval time.Duration, now func() time.Time,
	sync func(context.Context, time.Time) error, point, what string, log *zap.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			contain.Point(point)
			if err := sync(ctx, now()); err != nil && ctx.Err() == nil {
				log.Error(what, zap.Error(err))
			}
		}
	}
}

// Info describes a stored signing key, for `gatehouse keys list`.
type Info struct {
	ID        string
	Algorithm string // RS256, ES256 or EdDSA
	Status    string // "announced", "signing", "retired" (published), "expired"
	Encrypted bool
	Created   time.Time
	SignFrom  time.Time
	RetireAt  time.Time
	RemoveAt  time.Time
}

// List lists the stored signing keys and their status at now. It needs
// no key encryption key: private keys are not opened.
func List(ctx context.Context, st store.Keys, now time.Time) ([]Info, error) {
	stored, err := st.SigningKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading signing keys: %w", err)
	}
	out := make([]Info, 0, len(stored))
	for _, sk := range stored {
		k := &signingKey{signFrom: sk.SignFrom, retireAt: sk.RetireAt, removeAt: sk.RemoveAt}
		status := "retired"
		switch {
		case !k.publishedAt(now):
			status = "expired"
		case k.signsAt(now):
			status = "signing"
		case now.Before(k.signFrom):
			status = "announced"
		}
		out = append(out, Info{ID: sk.ID, Algorithm: sk.Algorithm, Status: status, Encrypted: sealed(sk.Private),
			Created: sk.Created, SignFrom: sk.SignFrom, RetireAt: sk.RetireAt, RemoveAt: sk.RemoveAt})
	}
	slices.SortStableFunc(out, func(a, b Info) int { return a.SignFrom.Compare(b.SignFrom) })
	return out, nil
}

// Rotate forces a rotation of alg's key in st without a running server,
// as `gatehouse keys rotate` does; running servers pick the change up
// within their CheckInterval. pol should be the servers' policy
// (Retention and Algorithms included).
func Rotate(ctx context.Context, st store.Keys, pol Policy, alg string, now time.Time, immediately bool, log *zap.Logger) (string, error) {
	m, err := NewManager(st, pol, log)
	if err != nil {
		return "", err
	}
	return m.Rotate(ctx, alg, now, immediately)
}

// RotateRevoking is Manager.RotateRevoking on st, with pol, for the CLI.
func RotateRevoking(ctx context.Context, st store.Keys, pol Policy, alg string, now time.Time, log *zap.Logger) (string, error) {
	m, err := NewManager(st, pol, log)
	if err != nil {
		return "", err
	}
	return m.RotateRevoking(ctx, alg, now)
}

// compareKeys orders keys by when they begin signing, then by when they
// stop (never last), then by id, so that every instance orders them alike.
func compareKeys(a, b *signingKey) int {
	if c := a.signFrom.Compare(b.signFrom); c != 0 {
		return c
	}
	switch {
	case a.retireAt.Equal(b.retireAt):
	case a.retireAt.IsZero():
		return 1
	case b.retireAt.IsZero():
		return -1
	default:
		return a.retireAt.Compare(b.retireAt)
	}
	return strings.Compare(a.id, b.id)
}
