package verify

import (
	"context"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/store"
)

// revocationSet is an immutable set of revocations: access tokens by
// jti, every access token of a refresh family, a subject's tokens issued
// before a time, and a subject's last entitlement change.
type revocationSet struct {
	jtis     map[string]struct{}
	families map[string]struct{}
	subjects map[string]time.Time // subject -> not before
	changes  map[string]store.Revocation
}

func newRevocationSet() *revocationSet {
	return &revocationSet{jtis: map[string]struct{}{}, families: map[string]struct{}{}, subjects: map[string]time.Time{},
		changes: map[string]store.Revocation{}}
}

// supersedes reports whether the entitlement change r replaces old, the
// one held for its subject: it is another record of the subject's change
// (a later one, or the same one read again with another set), not an
// older one read late.
func supersedes(r, old *store.Revocation) bool {
	if r.RevokedAt.Before(old.RevokedAt) {
		return false
	}
	return !r.RevokedAt.Equal(old.RevokedAt) || !r.NotBefore.Equal(old.NotBefore) || !r.Entitlements.Equal(*old.Entitlements)
}

// lacks reports whether set lacks r: adding it would refuse a token set
// accepts.
func (set *revocationSet) lacks(r *store.Revocation) bool {
	switch {
	case r.JTI != "":
		_, ok := set.jtis[r.JTI]
		return !ok
	case r.Entitlements != nil:
		old, ok := set.changes[r.Subject]
		return !ok || supersedes(r, &old)
	case r.FamilyID != "":
		_, ok := set.families[r.FamilyID]
		return !ok
	case r.Subject != "":
		return r.NotBefore.After(set.subjects[r.Subject])
	}
	return false
}

func (set *revocationSet) size() int {
	return len(set.jtis) + len(set.families) + len(set.subjects) + len(set.changes)
}

// revoked is an immutable snapshot of what is revoked, as checks read it
// through an atomic pointer: a large base, replaced by a full read, and a
// small delta of what later reads brought. A read that brings something
// new copies the delta alone, not the base, so a burst of revocations
// does not cost a copy of every revocation in force each; the delta is
// merged into a new base once it is twice the square root of the base's
// size (at least deltaMerge): a read that grows the set costs O(√N), N
// the revocations in force, not O(N).
type revoked struct {
	base, delta *revocationSet
}

// deltaMerge is the least size of a delta that is merged into the base.
const deltaMerge = 256

func newRevoked() *revoked { return &revoked{base: newRevocationSet(), delta: newRevocationSet()} }

// grows reports whether list holds a revocation that rv lacks.
func (rv *revoked) grows(list []store.Revocation) bool {
	for i := range list {
		if rv.base.lacks(&list[i]) && rv.delta.lacks(&list[i]) {
			return true
		}
	}
	return false
}

// with returns rv with list added (rv is not changed): a new delta, or,
// when the delta has grown large, a new base holding it all.
func (rv *revoked) with(list []store.Revocation) *revoked {
	delta := rv.delta.with(list)
	if delta.size() < max(deltaMerge, 2*int(math.Sqrt(float64(rv.base.size())))) {
		return &revoked{base: rv.base, delta: delta}
	}
	base := rv.base.with(nil)
	base.merge(delta)
	return &revoked{base: base, delta: newRevocationSet()}
}

// covers reports whether a revocation in rv covers id.
func (rv *revoked) covers(id *Identity) bool { return rv.base.covers(id) || rv.delta.covers(id) }

// change is the subject's entitlement change in force, if any: the
// delta's when it supersedes the base's.
func (rv *revoked) change(subject string) (store.Revocation, bool) {
	b, inBase := rv.base.changes[subject]
	d, inDelta := rv.delta.changes[subject]
	if inDelta && (!inBase || supersedes(&d, &b)) {
		return d, true
	}
	return b, inBase
}

// merge adds every revocation of o to set.
func (set *revocationSet) merge(o *revocationSet) {
	maps.Copy(set.jtis, o.jtis)
	maps.Copy(set.families, o.families)
	for sub, nbf := range o.subjects {
		if nbf.After(set.subjects[sub]) {
			set.subjects[sub] = nbf
		}
	}
	for _, c := range o.changes {
		set.addChange(c)
	}
}

// addChange holds the entitlement change c for its subject unless the
// one held supersedes it.
func (set *revocationSet) addChange(c store.Revocation) {
	if old, ok := set.changes[c.Subject]; !ok || supersedes(&c, &old) {
		set.changes[c.Subject] = c
	}
}

// with returns a copy of set with list added (set is not changed).
func (set *revocationSet) with(list []store.Revocation) *revocationSet {
	out := &revocationSet{jtis: maps.Clone(set.jtis), families: maps.Clone(set.families), subjects: maps.Clone(set.subjects),
		changes: maps.Clone(set.changes)}
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
		case r.Entitlements != nil:
			if r.Subject != "" {
				set.addChange(r)
			}
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

// checkRevoked refuses id when the last list read covers it: as revoked,
// or, when only an entitlement change of its subject covers it, as
// changed, with the identity narrowed to the pairs it still holds.
func (v *Verifier) checkRevoked(id *Identity) *Error {
	set := v.revoked.Load()
	if set == nil {
		return nil
	}
	if set.covers(id) {
		return refuse(ReasonRevoked, nil)
	}
	if c, ok := set.change(id.Subject); ok && c.Narrows(id.IssuedAt, id.Entitlements) {
		return &Error{Reason: ReasonEntitlementsChanged, Narrowed: id.narrowed(*c.Entitlements)}
	}
	return nil
}

// revocationReads is the bookkeeping of reading the list: one read at a
// time (the poll, RefreshRevocations, RevokedHere), what the last one read
// up to, and when the whole list was last read. started numbers the reads
// and last says what the last one that ended read, so that callers
// waiting together share one read.
type revocationReads struct {
	mu       sync.Mutex
	readTo   time.Time // the now of the last successful read
	reloaded time.Time // the now of the last full read
	started  atomic.Uint64
	last     lastRead // the last read that ended (mu)
}

// lastRead is what a read that ended read: its number, whether it
// succeeded, and the revocations it listed: all (full), or those stamped
// from from on.
type lastRead struct {
	n    uint64
	ok   bool
	full bool
	from time.Time
}

// serves reports whether the read last, which ended, serves a caller that
// needs a read numbered need or later listing the revocations stamped from
// from on: a successful one, started after the call (a failed one is not
// shared: its error may be its caller's context).
func (last lastRead) serves(need uint64, from time.Time) bool {
	return last.n >= need && last.ok && (last.full || !last.from.After(from))
}

// refreshRevocations reads what was revoked since the last read (less the
// overlap), or the whole list when a reload is due. On failure the last
// list keeps applying, and the verifier reports itself stale.
func (v *Verifier) refreshRevocations(ctx context.Context) error {
	r := &v.reads
	r.mu.Lock()
	defer r.mu.Unlock()
	return v.readRevocationsLocked(ctx, r.readTo.Add(-v.cfg.RevocationOverlap))
}

// readRevocationsLocked is one read: of the revocations stamped from from
// on, or of all when a reload is due. r.mu held.
func (v *Verifier) readRevocationsLocked(ctx context.Context, from time.Time) (err error) {
	r := &v.reads
	n := r.started.Add(1)
	now := v.cfg.Now()
	full := r.reloaded.IsZero() || now.Sub(r.reloaded) >= v.cfg.RevocationReload || now.Before(r.readTo)
	defer func() { r.last = lastRead{n: n, ok: err == nil, full: full, from: from} }()
	var list []store.Revocation
	if full {
		list, err = v.cfg.Revocations.Revocations(ctx, now)
	} else {
		list, err = v.cfg.Revocations.RevocationsSince(ctx, from, now)
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
		v.revoked.Store(&revoked{base: set, delta: newRevocationSet()})
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

// RefreshRevocations reads new revocations now, as the poll does (back
// RevocationOverlap from the last read): it returns once such a read that
// started after the call ended. Callers that wait together share one
// successful read.
func (v *Verifier) RefreshRevocations(ctx context.Context) error {
	return v.readShared(ctx, func(r *revocationReads) time.Time { return r.readTo.Add(-v.cfg.RevocationOverlap) })
}

// RevokedHere applies a revocation this instance has just committed,
// stamped (its RevokedAt) at since or later: it returns once a read that
// started after the call, of the revocations stamped from since on at
// least, ended. Callers that wait together share one successful read, so
// a burst of revocations costs a read or two, not one each behind one
// another; and each read goes back to the oldest stamp of those it serves
// (or the last read), not the poll's minute: a client revoking its own
// tokens fast cannot make each revocation cost more than the one before.
// What others committed late is the poll's to find.
func (v *Verifier) RevokedHere(ctx context.Context, since time.Time) error {
	return v.readShared(ctx, func(*revocationReads) time.Time { return since })
}

// readShared returns once a read that started after the call, of the
// revocations stamped from from(r) on, ended: the last one, when it
// serves, or one of its own. from is read under r.mu.
func (v *Verifier) readShared(ctx context.Context, from func(r *revocationReads) time.Time) error {
	if v.cfg.Revocations == nil {
		return nil
	}
	r := &v.reads
	need := r.started.Load() + 1 // a read that starts from now on
	r.mu.Lock()
	defer r.mu.Unlock()
	f := from(r)
	if r.last.serves(need, f) {
		return nil
	}
	return v.readRevocationsLocked(ctx, f)
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
