package wsauth

import (
	"cmp"
	"errors"
	"reflect"
	"slices"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// ErrNotLive is Reconfigure's refusal of a configuration whose Backend or
// Transport's fixed part (Transport.Fixed) differ from the one in force:
// what a live socket was opened with (its backend leg's address and
// dialer, its timers, its bounds) cannot change under it. The caller
// builds a new Gateway instead and drains this one.
var ErrNotLive = errors.New("backend or transport changed: not applicable to live sessions")

// Reconfigured is what Reconfigure did to the live sessions.
type Reconfigured struct {
	// Sessions is how many sessions were live: all of them go on.
	Sessions int
	// Changed is how many of them lost subscriptions there and then (the
	// new policy, venue table or subscription limit no longer allows
	// them). A session whose lock was busy is refitted by the supervisor
	// instead, and not counted.
	Changed int
}

// Reconfigure puts cfg in force on a live Gateway, as if it had been
// built with it, and keeps its sessions. cfg's Backend and Transport must
// be those in force, but for the Transport's admission settings (its
// origins, sub-protocols and compression: the next upgrades use them, the
// live sockets are done with them; Transport.Fixed); else ErrNotLive, and
// nothing changes. Everything else may differ: the hooks (the verifier, the identity server, the
// revocation signal, the metrics, the audit, the logger), Auth, Live,
// Limits, Policy, Venues, Profile and TraceSubject.
//
// The configuration is one pointer (Gateway.conf), so every reader sees
// the old one or the new one whole. Then each authenticated session is
// refitted as a re-authentication would (refitLocked): a subscription the
// new policy or venue table no longer allows ends with Error/Authority
// and a server Unsub; over a lowered subscription limit, or a lowered
// MaxSubscriptionBytes, the newest end with Error/Limited and a server
// Unsub; the backend gets an Unsub for each. The session stays open. Messages read after the swap are
// authorized by the new configuration; one the old one allowed and that
// is forwarded after the swap is authorized again under the session's
// lock (forwardLocked). The supervisor is restarted: it waits on the new
// RevocationsChanged, and verifies every session again at its first walk
// with the new verifier, whose refusals (a client removed, its scopes
// narrowed, a user disabled) end a session's authority as a revocation
// does.
//
// It never waits on a client or a backend: a session whose lock is busy
// is refitted by the supervisor's next walk.
func (g *Gateway) Reconfigure(cfg Config) (Reconfigured, error) {
	if err := cfg.Validate(); err != nil {
		return Reconfigured{}, err
	}
	cfg = cfg.withDefaults()
	g.reconfMu.Lock()
	defer g.reconfMu.Unlock()
	old := g.cfg()
	if !reflect.DeepEqual(old.Backend, cfg.Backend) || !reflect.DeepEqual(old.Transport.Fixed(), cfg.Transport.Fixed()) {
		return Reconfigured{}, ErrNotLive
	}
	cfg.gen = old.gen + 1
	cfg.upgrader = g.newUpgrader(&cfg)
	g.conf.Store(&cfg)
	g.restartSupervisor()
	live := g.liveSessions(nil)
	r := Reconfigured{Sessions: len(live)}
	for _, s := range live {
		if !s.mu.TryLock() {
			continue // the supervisor refits it (inspectUnder)
		}
		if s.refitUnder(&cfg) > 0 {
			r.Changed++
		}
	}
	return r, nil
}

// restartSupervisor ends the supervisor, if it runs, and starts another
// unless Shutdown was called meanwhile: it reads the configuration in
// force when it starts (the interval, the revocation signal).
func (g *Gateway) restartSupervisor() {
	g.mu.Lock()
	stop, done := g.stopSup, g.supDone
	g.mu.Unlock()
	if stop == nil {
		return // started with the first session, on the new configuration
	}
	stop()
	<-done // the supervisor never waits on a client or a backend
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.startSupervisorLocked()
	}
}

// refitUnder is refitLocked with s.mu held, which it releases.
func (s *session) refitUnder(cur *Config) int {
	defer s.mu.Unlock()
	return s.refitLocked(cur)
}

// refitLocked fits a live session's subscriptions to cur, once per
// configuration: those cur's policy or venue table no longer allows end
// as a scope lost at a re-authentication does (Error/Authority and a
// server Unsub to the client), and over cur's subscription limit or its
// MaxSubscriptionBytes the newest end with Error/Limited and a server
// Unsub. The backend's Unsubs
// are owed and written by a goroutine of the session's (unsubscribe), as
// a narrowing's are; what the client is told is pushed. It returns how
// many ended. A lapsed session is fitted when it authenticates again (its
// remembered subscriptions are filtered then, reauthenticate). s.mu held.
func (s *session) refitLocked(cur *Config) int {
	if s.subs.fitted == cur.gen || s.auth.ended || s.auth.standing != authLive {
		return 0
	}
	s.subs.fitted = cur.gen
	var out [][]byte
	var ended []subKey
	for _, k := range s.subs.keys() {
		msg := s.subs.msgs[k]
		if why := s.mayKeepLocked(k, msg); why != "" {
			out = append(out, s.endSubLocked(k, msg, why, zenith.CodeAuthority)...)
			ended = append(ended, k)
		}
	}
	if over := len(s.subs.msgs) - cur.Limits.limitsFor(&s.auth.id).Subscriptions; over > 0 {
		for _, k := range s.subs.newest(over) {
			out = append(out, s.endSubLocked(k, s.subs.msgs[k], endLimit, CodeLimited)...)
			ended = append(ended, k)
			cur.Hooks.Metrics.Limited(LimitSubscriptions)
		}
	}
	// Over a lowered MaxSubscriptionBytes, likewise: the newest end until
	// the copies kept fit (each end lowers bytes), one sort for them all.
	if s.subs.bytes > cur.Limits.MaxSubscriptionBytes {
		for _, k := range s.subs.newest(len(s.subs.msgs)) {
			if s.subs.bytes <= cur.Limits.MaxSubscriptionBytes {
				break
			}
			out = append(out, s.endSubLocked(k, s.subs.msgs[k], endLimit, CodeLimited)...)
			ended = append(ended, k)
			cur.Hooks.Metrics.Limited(LimitSubscriptions)
		}
	}
	if len(ended) == 0 {
		return 0
	}
	s.subs.owed = append(s.subs.owed, ended...)
	if s.auth.bc != nil {
		// Added under s.mu before teardown sets ended, so before its Wait.
		s.life.wg.Add(1)
		contain.Go(cur.Hooks.Logger, "ws.unsubscribe", s.unsubscribe, s.crashed)
	}
	for _, m := range out {
		if !s.push(m) {
			break // the client is not reading, and is being closed for it
		}
	}
	// Each end is in the audit already (untrackLocked's subscription_end).
	cur.Hooks.Logger.Info("ws session reconfigured", zap.String("user", s.auth.id.Subject),
		zap.Int("subscriptions_ended", len(ended)), zap.String("remote", s.client.remote))
	return len(ended)
}

// newest are the n subscriptions tracked last, newest first. The
// session's mu held.
func (t *subscriptions) newest(n int) []subKey {
	keys := t.keys()
	slices.SortFunc(keys, func(a, b subKey) int { return cmp.Compare(t.order[b], t.order[a]) })
	return keys[:min(n, len(keys))]
}
