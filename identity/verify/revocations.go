package verify

import (
	"context"
	"maps"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/store"
)

// revocationSet is an immutable snapshot of what is revoked: access
// tokens by jti, every access token of a refresh family, and a subject's
// tokens issued before a time. Checks read the snapshot through an atomic
// pointer; a read that brings something new replaces it with a copy.
type revocationSet struct {
	jtis     map[string]struct{}
	families map[string]struct{}
	subjects map[string]time.Time // subject -> not before
}

func newRevocationSet() *revocationSet {
	return &revocationSet{jtis: map[string]struct{}{}, families: map[string]struct{}{}, subjects: map[string]time.Time{}}
}

// with returns a copy of set with list added (set is not changed).
func (set *revocationSet) with(list []store.Revocation) *revocationSet {
	out := &revocationSet{jtis: maps.Clone(set.jtis), families: maps.Clone(set.families), subjects: maps.Clone(set.subjects)}
	out.add(list)
	return out
}

func (set *revocationSet) add(list []store.Revocation) {
	for _, r := range list {
		switch {
		case r.JTI != "":
			set.jtis[r.JTI] = struct{}{}
		case r.FamilyID != "":
			set.families[r.FamilyID] = struct{}{}
		case r.Subject != "":
			if r.NotBefore.After(set.subjects[r.Subject]) {
				set.subjects[r.Subject] = r.NotBefore
			}
		}
	}
}

// covers reports whether a revocation in the set covers id.
func (set *revocationSet) covers(id *Identity) bool {
	if _, ok := set.jtis[id.JTI]; ok && id.JTI != "" {
		return true
	}
	if _, ok := set.families[id.FamilyID]; ok && id.FamilyID != "" {
		return true
	}
	nbf, ok := set.subjects[id.Subject]
	// iat has whole seconds: a token issued in the second of the
	// revocation counts as before it (it may have been), so it is refused
	// even if it came a moment after.
	return ok && id.IssuedAt.Before(nbf)
}

// isRevoked reports whether id is revoked by the last list read.
func (v *Verifier) isRevoked(id *Identity) bool {
	set := v.revoked.Load()
	return set != nil && set.covers(id)
}

// revocationReads is the bookkeeping of reading the list: one read at a
// time (the poll and RefreshRevocations after a local revocation), what
// the last one read up to, and when the whole list was last read.
type revocationReads struct {
	mu       sync.Mutex
	readTo   time.Time // the now of the last successful read
	reloaded time.Time // the now of the last full read
}

// refreshRevocations reads what was revoked since the last read (less the
// overlap), or the whole list when a reload is due. On failure the last
// list keeps applying, and the verifier reports itself stale.
func (v *Verifier) refreshRevocations(ctx context.Context) error {
	r := &v.reads
	r.mu.Lock()
	defer r.mu.Unlock()
	now := v.cfg.Now()
	full := r.reloaded.IsZero() || now.Sub(r.reloaded) >= v.cfg.RevocationReload || now.Before(r.readTo)
	var (
		list []store.Revocation
		err  error
	)
	if full {
		list, err = v.cfg.Revocations.Revocations(ctx, now)
	} else {
		list, err = v.cfg.Revocations.RevocationsSince(ctx, r.readTo.Add(-v.cfg.RevocationOverlap), now)
	}
	if err != nil {
		if !v.stale.Swap(true) {
			v.cfg.Logger.Warn("revocation list unavailable: the last list keeps applying", zap.Error(err))
		}
		v.stats.revocationErrors.Add(1)
		return err
	}
	switch {
	case full:
		set := newRevocationSet()
		set.add(list)
		v.revoked.Store(set)
		r.reloaded = now
	case len(list) > 0:
		v.revoked.Store(v.revoked.Load().with(list))
	}
	r.readTo = now
	if v.stale.Swap(false) {
		v.cfg.Logger.Info("revocation list available again", zap.Int("read", len(list)))
	}
	return nil
}

// RefreshRevocations reads new revocations now, e.g. right after this
// instance revoked a token.
func (v *Verifier) RefreshRevocations(ctx context.Context) error {
	if v.cfg.Revocations == nil {
		return nil
	}
	return v.refreshRevocations(ctx)
}

// Run keeps the revocation list fresh until ctx ends. Without revocations
// configured it returns at once.
func (v *Verifier) Run(ctx context.Context) {
	if v.cfg.Revocations == nil {
		return
	}
	t := time.NewTicker(v.cfg.RevocationRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(ctx, v.cfg.RevocationRefresh)
			_ = v.refreshRevocations(rctx)
			cancel()
		}
	}
}

// RevocationsStale reports whether the last refresh of the revocation list
// failed (the previous list is still applied).
func (v *Verifier) RevocationsStale() bool { return v.stale.Load() }
