package wsauth

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// CodeSession answers a client message the session refuses whatever its
// rights: one using a reserved TransactionID.
const CodeSession = "Session"

// Reserved TransactionIDs. The gateway's own messages to the backend (the
// Unsubs it sends when authority lapses or a scope is lost) carry
// TransactionIDs of a reserved range, which the backend must be able to
// read (Backend.TransactionIDs): a tidScheme's base plus a per-session
// counter, wrapping within span, all of them written with the scheme's
// prefix. A client message whose TransactionID is written with the prefix
// (for TransactionIDsInt53, after any minus sign) is refused with
// Error/Session, and one outside the scheme's range with
// Error/Data.Deserialise, as the backend would refuse it; a backend
// message holding "TransactionID": followed by the prefix (no space, or
// one, after the colon) is dropped unread: it answers the gateway. That
// test is a byte search, never a parse: backend traffic is never
// JSON-parsed. It holds as long as the backend echoes a TransactionID as
// it received it (a number, in decimal, as the protocol has it); a nested
// member named TransactionID with a reserved value, in a message's Data,
// drops that message too. The search starts once the session has sent the
// backend a message of its own (subscriptions.ownSent): before that, nothing
// the backend sends can answer the gateway.
type tidScheme struct {
	min, max  int64  // a client's TransactionID must be within
	prefix    []byte // how every reserved TransactionID is written
	bothSigns bool   // a client's reserved with or without a minus sign
	base      int64  // the first reserved TransactionID
	span      int64  // how many there are, from base up
}

// The schemes of Backend.TransactionIDs.
var (
	// int53: the integers a double holds exactly, as JavaScript and the
	// web client have them; the gateway's from 9007199254000000 to
	// 2^53 - 2.
	schemeInt53 = tidScheme{min: -zenith.MaxTransactionID, max: zenith.MaxTransactionID, prefix: []byte("9007199254"),
		bothSigns: true, base: 9007199254000000, span: 740991}
	// int32: a backend that reads TransactionID as a 32-bit int; the
	// gateway's from -2^31 to -2147400000, which no client counter
	// reaches.
	schemeInt32 = tidScheme{min: math.MinInt32, max: math.MaxInt32, prefix: []byte("-21474"),
		base: math.MinInt32, span: 83649}
)

// reserved reports whether a client's TransactionID (its JSON text, nil
// for none) is in the reserved range.
func (sc *tidScheme) reserved(text []byte) bool {
	if sc.bothSigns {
		text = bytes.TrimPrefix(text, []byte{'-'})
	}
	return bytes.HasPrefix(text, sc.prefix)
}

// answersGateway reports whether msg, a backend message, carries a
// TransactionID written with prefix, the reserved TransactionIDs' (a
// tidScheme's).
func answersGateway(msg, prefix []byte) bool {
	for i := 0; ; {
		j := bytes.Index(msg[i:], prefix)
		if j < 0 {
			return false
		}
		j += i
		if p := msg[:j]; bytes.HasSuffix(p, []byte(`"TransactionID":`)) || bytes.HasSuffix(p, []byte(`"TransactionID": `)) {
			return true
		}
		i = j + 1
	}
}

// nextTransactionID appends the next reserved TransactionID of sc. The
// session's mu held.
func (t *subscriptions) nextTransactionID(dst []byte, sc *tidScheme) []byte {
	n := sc.base + t.tidSeq
	t.tidSeq = (t.tidSeq + 1) % sc.span
	return strconv.AppendInt(dst, n, 10)
}

// subscriptions are the client's subscriptions as the gateway tracks them,
// and the gateway's own messages to the backend: under the session's mu,
// but ownSent, which the backend reader reads without it.
type subscriptions struct {
	msgs     map[subKey][]byte // each subscription's Sub message (a copy)
	bytes    int64             // the bytes of the messages and their keys' topics
	identify bool              // the client subscribed to Auth/Identify
	tidSeq   int64             // the next reserved TransactionID's offset
	owed     []subKey          // the backend's Unsubs since a lapse, not yet written (unsubscribe)
	order    map[subKey]uint64 // when each subscription was tracked (seq): the newest end first over a lowered limit
	seq      uint64            // the next subscription's order
	fitted   uint64            // the gen of the configuration the subscriptions were last fitted to (refitLocked)

	ownSent atomic.Bool // the gateway has sent the backend a message of its own
}

// subKey is a subscription: its Controller and its Topic with the "!"
// arguments.
type subKey struct{ controller, topic string }

// forward writes msg, a client message the policy allows, to the backend
// leg, and tracks the subscriptions it makes and ends: a Sub adds a copy
// of msg (re-sent when a lapsed session authenticates again), an Unsub
// drops it. The backend gets an Unsub as the gateway writes its own
// (AppendUnsub: Controller, Topic, the client's TransactionID and its
// Confirm, which asks for a confirmation; no Data), not as the client
// wrote it: one the backend could not read, and
// so would not act on, would leave the subscription open at the backend
// and forgotten here, where no lapse or lost scope would end it. All
// under mu, so a lapse either precedes the authority check
// or follows the write. While authority has lapsed nothing is forwarded
// (Error/Authority); an Unsub then still drops its subscription, which is
// not re-sent. A Sub for a new subscription past Limits.Subscriptions or
// MaxSubscriptionBytes is answered Error/Limited. Client reader only.
func (s *session) forward(msg []byte, env *zenith.Envelope) bool {
	switch refused, err := s.forwardLocked(msg, env); {
	case refused == "authority lapsed" || refused == refusedEntitlement || refused == refusedPolicy:
		s.deny(env, refused)
		return false
	case refused == LimitSubscriptions:
		s.limited(env, LimitSubscriptions)
		return false
	case err != nil:
		s.g.log().Warn("ws backend write failed", zap.String("user", s.auth.id.Subject), zap.Error(err))
		s.closeAfterQueued(websocket.CloseInternalServerErr)
		return false
	}
	if label := controllerLabel(env.Controller); label != s.in.relayed.label {
		s.reportRelayed()
		s.in.relayed.label = label
	}
	s.in.relayed.n++ // reported with the batch (flushBackend)
	return true
}

// refusedEntitlement is forwardLocked's refusal of a message whose venue
// the session's entitlements do not allow (Config.Venues).
const refusedEntitlement = "entitlement"

// refusedPolicy is forwardLocked's refusal of a message the policy allowed
// when the client reader checked it (allowed) and a Reconfigure's policy,
// put in force since, does not.
const refusedPolicy = "policy"

// forwardLocked is forward's work under mu, released by a deferred call
// so that a panic in it leaves the lock free: refused is "authority
// lapsed", refusedEntitlement or LimitSubscriptions when the message is
// not forwarded, err a failed write to the backend. The venue check is
// made here, under mu, so that a narrowing of the entitlements
// (narrowLocked) and a Sub are ordered: a Sub either is refused or is
// tracked before the narrowing, which then ends it. An Unsub and a
// Cancel are never refused for a venue. A subscription's start and end are
// recorded here too (auditSubLocked), in the order the backend sees them.
func (s *session) forwardLocked(msg []byte, env *zenith.Envelope) (refused string, err error) {
	k := subKey{env.Controller, env.Topic}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auth.standing != authLive {
		if env.Action == zenith.ActionUnsub {
			s.untrackLocked(k, "") // its end was recorded at the lapse
		}
		return "authority lapsed", nil
	}
	if cur := s.g.cfg(); cur.gen != s.in.conf {
		// Reconfigured since handle's check: a refit that ran meanwhile
		// has not seen this message, so the new policy is asked here,
		// under mu, as the venue table is below.
		s.refresh(cur)
		if ok, _ := cur.Policy.Allowed(s.auth.id.Scopes, env.Controller, env.Topic); !ok &&
			env.Action != zenith.ActionUnsub && env.Action != zenith.ActionCancel {
			return refusedPolicy, nil
		}
	}
	if v := s.g.cfg().Venues; v != nil && env.Action != zenith.ActionUnsub && env.Action != zenith.ActionCancel {
		if ok, reason := v.Check(s.auth.ent, env.Controller, env.Topic, env.Data); !ok {
			if ce := s.g.log().Check(zap.DebugLevel, "ws venue refused"); ce != nil {
				ce.Write(zap.String("user", s.auth.id.Subject), zap.String("why", reason))
			}
			return refusedEntitlement, nil
		}
	}
	if len(s.subs.owed) > 0 {
		// A narrowing's Unsubs go before anything the client sends after
		// it (a Sub of the same topic, allowed again by a wider
		// credential, must not be undone by a late Unsub).
		if err := s.writeOwedLocked(); err != nil {
			return "", err
		}
	}
	switch env.Action {
	case zenith.ActionSub:
		contain.Point("ws.session_locked")
		if !s.trackLocked(k, msg) {
			return LimitSubscriptions, nil
		}
	case zenith.ActionUnsub:
		s.untrackLocked(k, endUnsub)
		msg = zenith.AppendUnsub(nil, env.Controller, env.Topic, env.TransactionIDText, env.Confirm)
	}
	return "", s.writeBackendLocked(msg)
}

// reportRelayed counts the forwards not yet counted (Metrics.Relayed): a
// run of messages for one controller label at once, not one at a time.
// Client reader only.
func (s *session) reportRelayed() {
	if s.in.relayed.n > 0 {
		s.g.cfg().Hooks.Metrics.Relayed(s.in.relayed.label, s.in.relayed.n)
		s.in.relayed.n = 0
	}
}

// trackLocked records the Sub msg for k, replacing an earlier one; false
// when a limit refuses it. What a subscription holds counts against
// MaxSubscriptionBytes: its message and its key's topic (a string of its
// own). s.mu held.
func (s *session) trackLocked(k subKey, msg []byte) bool {
	old, had := s.subs.msgs[k]
	n := s.subs.bytes + int64(len(msg))
	if had {
		n -= int64(len(old))
	} else {
		n += int64(len(k.topic))
	}
	if !had && len(s.subs.msgs) >= s.in.limits.Subscriptions || n > s.g.cfg().Limits.MaxSubscriptionBytes {
		return false
	}
	if s.subs.msgs == nil {
		s.subs.msgs, s.subs.order = map[subKey][]byte{}, map[subKey]uint64{}
	}
	if had && cap(old) >= len(msg) {
		s.subs.msgs[k] = append(old[:0], msg...) // the Sub it replaces: its room is reused
	} else {
		s.subs.msgs[k] = bytes.Clone(msg)
	}
	s.subs.bytes = n
	if !had {
		s.subs.order[k] = s.subs.seq
		s.subs.seq++
		s.g.cfg().Hooks.Metrics.Subscriptions(controllerLabel(k.controller), 1)
		s.auditSubLocked(audit.KindSubscriptionStart, k, msg, "")
	}
	return true
}

// untrackLocked forgets the subscription k, if tracked, and records its
// end for the reason why ("" records none: it ended at a lapse). s.mu
// held.
func (s *session) untrackLocked(k subKey, why string) {
	old, had := s.subs.msgs[k]
	if !had {
		return
	}
	if why != "" {
		s.auditSubLocked(audit.KindSubscriptionEnd, k, old, why)
	}
	delete(s.subs.msgs, k)
	delete(s.subs.order, k)
	s.subs.bytes -= int64(len(old) + len(k.topic))
	s.g.cfg().Hooks.Metrics.Subscriptions(controllerLabel(k.controller), -1)
}

// dropSubsLocked forgets every subscription (teardown), and records the
// end of those that still flowed. s.mu held.
func (s *session) dropSubsLocked() {
	why := endSession
	if s.auth.standing != authLive {
		why = "" // their end was recorded at the lapse
	}
	for _, k := range s.subs.keys() {
		s.untrackLocked(k, why)
	}
	s.subs.msgs, s.subs.order = nil, nil
}

// keys are the tracked subscriptions in order, so the backend sees the
// gateway's own messages in a stable order. The session's mu held.
func (t *subscriptions) keys() []subKey {
	keys := make([]subKey, 0, len(t.msgs))
	for k := range t.msgs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b subKey) int {
		return cmp.Or(cmp.Compare(a.controller, b.controller), cmp.Compare(a.topic, b.topic))
	})
	return keys
}

// writeBackendLocked adds one data message to the backend leg's batch
// (wsframe.Conn.AppendFrame), which the client reader flushes before it
// reads the client again (flushBackend) and a lapse's goroutine after
// its Unsubs (unsubscribe); each write within WriteTimeout. s.mu held: it
// is the leg's one data writer.
func (s *session) writeBackendLocked(msg []byte) error {
	if s.auth.bw == nil {
		_ = s.auth.bc.SetWriteDeadline(deadline(s.g.cfg().Transport.WriteTimeout))
		return s.auth.bc.WriteMessage(websocket.TextMessage, msg)
	}
	return s.auth.bw.AppendFrame(websocket.TextMessage, msg)
}

// unsubBackendLocked sends the backend the gateway's own Unsub of k, with
// a reserved TransactionID. s.mu held. From then on the backend reader
// looks for the backend's answers to drop them (ownSent), before the
// message can reach the backend.
func (s *session) unsubBackendLocked(k subKey) error {
	s.subs.ownSent.Store(true)
	msg := zenith.AppendUnsub(nil, k.controller, k.topic, s.subs.nextTransactionID(nil, s.g.cfg().tids), false)
	return s.writeBackendLocked(msg)
}

// ownPrefix is how the gateway's own TransactionIDs are written, once it
// has sent the backend a message of its own (ownSent); nil before.
func (s *session) ownPrefix() []byte {
	if s.subs.ownSent.Load() {
		return s.g.cfg().tids.prefix
	}
	return nil
}
