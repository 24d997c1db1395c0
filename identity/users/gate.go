package users

import (
	"context"
	"sync"
)

// gate shares the hash slots fairly between sources: no source holds more
// than its share of the slots, and no source has more than maxQueued
// attempts waiting or hashing; the excess is refused before it waits, so
// a flood from one address neither holds the pool nor makes a queue that
// others wait behind. It is safe for concurrent use; mu guards perSource.
type gate struct {
	slots     chan struct{} // the hash slots, shared by all
	share     int           // slots one source may hold at once
	maxQueued int           // attempts one source may have in the gate
	mu        sync.Mutex
	perSource map[string]*sourceSlots
}

// sourceSlots is one source's part of the gate.
type sourceSlots struct {
	held   chan struct{} // capacity share: the slots the source holds
	queued int           // attempts of the source in the gate, under mu
}

func newGate(slots, share, maxQueued int) *gate {
	return &gate{slots: make(chan struct{}, slots), share: share, maxQueued: maxQueued, perSource: map[string]*sourceSlots{}}
}

// enter admits an attempt of source into the gate, or reports false when
// the source already has maxQueued attempts in it. A true enter must be
// followed by leave.
func (g *gate) enter(source string) (*sourceSlots, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.perSource[source]
	if s == nil {
		s = &sourceSlots{held: make(chan struct{}, g.share)}
		g.perSource[source] = s
	}
	if s.queued >= g.maxQueued {
		return nil, false
	}
	s.queued++
	return s, true
}

// leave ends an attempt that enter admitted, forgetting an idle source.
func (g *gate) leave(source string, s *sourceSlots) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s.queued--
	if s.queued == 0 {
		delete(g.perSource, source)
	}
}

// acquire waits for one of the source's share and then one of the shared
// slots, until ctx ends. A nil error must be followed by release.
func (g *gate) acquire(ctx context.Context, s *sourceSlots) error {
	select {
	case s.held <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		<-s.held
		return ctx.Err()
	}
}

func (g *gate) release(s *sourceSlots) {
	<-g.slots
	<-s.held
}
