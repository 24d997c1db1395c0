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

// grows reports whether list holds a revocation that set lacks: adding
// it would refuse a token set accepts.
func (set *revocationSet) grows(list []store.Revocation) bool {
	for _, r := range list {
		switch {
		case r.JTI != "":
			if _, ok := set.jtis[r.JTI]; !ok {
				return true
			}
		case r.FamilyID != "":
			if _, ok := set.families[r.FamilyID]; !ok {
				return true
			}
		case r.Subject != "":
			if r.NotBefore.After(set.subjects[r.Subject]) {
				return true
			}
		}
	}
	return false
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
	return ok && id.Authenticated().Before(nbf)
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
	old := v.revoked.Load()
	grew := old.grows(list)
	switch {
	case full:
		set := newRevocationSet()
		set.add(list)
		v.revoked.Store(set)
		r.reloaded = now
	case grew:
		v.revoked.Store(old.with(list))
	}
	r.readTo = now
	if grew {
		v.changed.fire()
	}
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

// Run keeps the revocation list fresh until ctx ends: it reads what was
// revoked every RevocationRefresh and, when the lister is also a
// store.RevocationNotifier (the PostgreSQL store), at each notice, so that
// a revocation made on another instance applies here at once; the poll
// stays, for notices lost with a connection. Without revocations
// configured it returns at once.
func (v *Verifier) Run(ctx context.Context) {
	if v.cfg.Revocations == nil {
		return
	}
	var notices <-chan struct{}
	if n, ok := v.cfg.Revocations.(store.RevocationNotifier); ok {
		notices = n.RevocationNotices(ctx)
	}
	t := time.NewTicker(v.cfg.RevocationRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case _, ok := <-notices:
			if !ok {
				notices = nil // closed: the poll goes on alone
				continue
			}
			v.stats.notices.Add(1)
		}
		rctx, cancel := context.WithTimeout(ctx, v.cfg.RevocationRefresh)
		_ = v.refreshRevocations(rctx)
		cancel()
	}
}

// RevocationsChanged returns a channel that is closed the next time the
// revocations in force grow (a read brought one the verifier did not
// apply yet), so that a holder of long-lived sessions (the message
// gateway) can check them again at once rather than at its own pace.
// Call it again after each close for the next change. Without
// revocations configured the channel is never closed.
func (v *Verifier) RevocationsChanged() <-chan struct{} { return v.changed.wait() }

// signal is a broadcast that can be waited for again and again: wait
// returns a channel that the next fire closes.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *signal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// RevocationsStale reports whether the last refresh of the revocation list
// failed (the previous list is still applied).
func (v *Verifier) RevocationsStale() bool { return v.stale.Load() }
