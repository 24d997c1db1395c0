package users

import (
	"context"
	"sync"
)

// inflight tracks, per (user, source) pair, the attempts of this instance
// that may still change the pair's count: those asking admission and those
// admitted but not decided. Admission counts an attempt before its hash,
// so parallel logins of one user from one address can fill the count while
// all of them are right; an attempt refused then asks again whenever an
// attempt was decided since it asked (a success takes its count back), and
// gives up as locked only when none was and none is pending. mu guards
// pairs and their fields.
type inflight struct {
	mu    sync.Mutex
	pairs map[string]*pairFlight
}

// pairFlight is the state of one pair.
type pairFlight struct {
	pending int           // attempts asking admission or admitted, not decided
	waiting int           // refused attempts waiting in again
	version int           // attempts decided so far
	changed chan struct{} // closed (and replaced) when pending or version change
}

func (f *inflight) get(key string) *pairFlight {
	if f.pairs == nil {
		f.pairs = map[string]*pairFlight{}
	}
	p := f.pairs[key]
	if p == nil {
		p = &pairFlight{changed: make(chan struct{})}
		f.pairs[key] = p
	}
	return p
}

// notify wakes the waiters of p and forgets an idle pair; under mu.
func (f *inflight) notify(key string, p *pairFlight) {
	close(p.changed)
	p.changed = make(chan struct{})
	if p.pending == 0 && p.waiting == 0 {
		delete(f.pairs, key)
	}
}

// join notes an attempt of key about to ask admission and returns the
// version it asks at; refused or decided must follow.
func (f *inflight) join(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.get(key)
	p.pending++
	return p.version
}

// refused notes that an attempt of key was refused admission.
func (f *inflight) refused(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pairs[key]
	p.pending--
	f.notify(key, p)
}

// decided notes that an admitted attempt of key was decided.
func (f *inflight) decided(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pairs[key]
	p.pending--
	p.version++
	f.notify(key, p)
}

// again is for an attempt of key refused at version: it reports whether to
// ask admission again (then it has joined again, at the returned version):
// yes once an attempt was decided since version; no when none was and none
// is pending, or ctx ends.
func (f *inflight) again(ctx context.Context, key string, version int) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.get(key)
	p.waiting++
	defer func() {
		p.waiting--
		if p.pending == 0 && p.waiting == 0 {
			delete(f.pairs, key)
		}
	}()
	for {
		if p.version != version {
			p.pending++
			return p.version, true
		}
		if p.pending == 0 {
			return version, false
		}
		changed := p.changed
		f.mu.Unlock()
		select {
		case <-changed:
			f.mu.Lock()
		case <-ctx.Done():
			f.mu.Lock()
			return version, false
		}
	}
}
