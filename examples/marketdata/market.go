package marketdata

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// Kinds of the market-data topics: the part of a topic before its '!'.
const (
	kindSecurity = "Security" // Security!<code>.<venue>: the symbol's quote
	kindDepth    = "Depth"    // Depth!<code>.<venue>: its order book by price level
)

// topic is one subscribable market-data topic of a symbol, and its
// subscribers. Its subs are guarded by market.mu.
type topic struct {
	name  string // "Security!BHP.ASX"
	kind  string // kindSecurity or kindDepth
	venue string // "ASX"
	// snapshot is the Data of the message that follows the Sub
	// confirmation; update is the message of one step. Both are called
	// under market.mu.
	snapshot func() any
	update   func() []byte

	subs map[*conn]struct{} // connections subscribed to the topic
}

// market simulates the demo markets and fans their updates out to the
// subscribed connections.
//
// Goroutines: the ticker goroutine (run) calls step; connections' reader
// goroutines call subscribe, unsubscribe and remove; anyone may call
// counts. Everything behind mu: the random source, every security's
// fields, every topic's subscribers. A message is queued to a connection
// under mu, so a subscriber receives the Sub confirmation and the
// snapshot before any update, and nothing after the Unsub confirmation.
type market struct {
	mu         sync.Mutex
	rng        *rand.Rand
	securities []*security
	topics     []*topic          // per security, in its order: Security, then Depth
	byTopic    map[string]*topic // immutable after newMarket
}

func newMarket(seed uint64) *market {
	m := &market{
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		byTopic: map[string]*topic{},
	}
	for _, d := range demoSecurities {
		s := newSecurity(d.code, d.venue, d.name, d.close)
		m.book(s)
		m.securities = append(m.securities, s)
		for _, t := range []*topic{s.quoteTopic(), s.depthTopic()} {
			m.topics = append(m.topics, t)
			m.byTopic[t.name] = t
		}
	}
	return m
}

// run steps the market every interval until stop is closed.
func (m *market) run(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			contain.Point("demo.market")
			m.step()
		case <-stop:
			return
		}
	}
}

// step moves every security by one walk step (one trade), then queues
// each topic's update to its subscribers, in the order of m.topics. Each
// update is encoded once, whatever the number of subscribers, and only
// for a topic that has any.
func (m *market) step() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.securities {
		m.walk(s)
		m.book(s)
	}
	for _, t := range m.topics {
		if len(t.subs) == 0 {
			continue
		}
		msg := t.update()
		for c := range t.subs {
			c.enqueue(msg)
		}
	}
}

// subscribe adds c to the subscribers of t and queues the confirmation
// and a snapshot. A second subscription is confirmed again and gets a
// fresh snapshot; c is still one subscriber, which gets one update per
// step and is counted once.
func (m *market) subscribe(c *conn, req request, t *topic) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !c.enqueue(subConfirm(req)) {
		return
	}
	if !c.enqueue(encode(reply{Controller: req.Controller, Topic: req.Topic, Action: actionSub, Data: t.snapshot()})) {
		return
	}
	t.subs[c] = struct{}{}
}

// unsubscribe removes c from the subscribers of t and, when the request
// asks for it, queues the confirmation: after it, c gets no update of t.
func (m *market) unsubscribe(c *conn, req request, t *topic) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(t.subs, c)
	if req.Confirm {
		c.enqueue(unsubConfirm(req))
	}
}

// remove drops every subscription of c (c is closing).
func (m *market) remove(c *conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.topics {
		delete(t.subs, c)
	}
}

// counts returns the number of subscribers per venue and kind of topic,
// keyed "<venue>/<kind>", with every pair the market serves (zeros too).
func (m *market) counts() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(demoVenues)*2)
	for _, t := range m.topics {
		out[t.venue+"/"+t.kind] += len(t.subs)
	}
	return out
}
