package integration

import (
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
)

// The scripted day of TestAuditDay: who does what, on which instance, in
// which slot.

// The script's size and pace. Every step has a slot of its own, dayTick
// apart, so that the order of the audit's records is the order of the
// steps although each takes some milliseconds.
const (
	daySessions = 24
	daySpacing  = 6  // slots between sessions' opens, at most
	dayLife     = 20 // slots a session lives, at least
	dayTick     = 100 * time.Millisecond
	// dayCloseSlack is how long after the client saw its close echoed the
	// gateway may still be recording the session's subscription ends.
	dayCloseSlack = 200 * time.Millisecond
	// dayMinuteSlack is what each subscription's live time may be off by
	// beyond the bounds the test saw: the clock read between a record's
	// time and the test's.
	dayMinuteSlack = 5 * time.Millisecond
	// dayMinLife is the fewest slots a subscription lives: longer than
	// the width of the bounds of a pair's minutes, so that a lost
	// subscription shows in them.
	dayMinLife = 16
)

// dayPrincipals are the principals of the script: two users and the
// client-credentials client, with the pairs each holds.
var dayPrincipals = []string{"demo", "trader", serviceClient}

func dayPairs(principal string) entitle.Set {
	if principal == serviceClient {
		return entitle.MustParse("ASX:quotes") // Caddyfile.example's demo-service
	}
	return demoPairs[principal]
}

// dayTopics are the subscriptions the script picks from: quotes and depth
// of both venues, some of which each principal is refused.
var dayTopics = func() []string {
	var out []string
	for _, topic := range []string{"Security", "Depth"} {
		for _, sym := range replaySymbols {
			out = append(out, topic+"!"+sym)
		}
	}
	return out
}()

// dayQuery is a statement of the script's queries; venues says whether it
// reads the venue table (Security), whose selects the report counts.
type dayQuery struct {
	iql    string
	venues bool
}

var dayQueries = []dayQuery{
	{"select Code, Exchange from Security", true},
	{"select Code from Security where Exchange = 'NZX'", true},
	{"select Code from Security where Exchange = 'ASX'", true},
	{"select Code from Security where Code = 'NOPE'", true}, // ok, no row
	{"select Nope from Security", true},                     // refused: no such column
	{"select Headline from News", false},                    // no venue column; refused without Service/News
}

type stepKind int

const (
	stepOpen stepKind = iota
	stepSub
	stepUnsub
	stepClose
	stepQuery
	// stepEntitle runs `gatehouse user entitle viewer NZX:quotes` beside
	// the day (the CLI takes longer than a slot), waits for an instance
	// to write its entitlement_change, and logs viewer in again.
	stepEntitle
)

// dayChangeWait is the slots between the entitle command's start and the
// session of viewer that uses the pair: enough for the command, the
// claim of its change (each instance looks every second) and a login.
const dayChangeWait = 40

// dayChanged are the pairs viewer holds after the day's change.
var dayChanged = entitle.MustParse("NZX:quotes")

// dayStep is one step of the script, on session (an index into the
// script's sessions).
type dayStep struct {
	kind    stepKind
	session int
	topic   string // stepSub, stepUnsub
	query   int    // stepQuery: an index into dayQueries
	slot    int    // when: dayTick times slot after the day's start
}

type daySession struct {
	principal string
	instance  int         // 0 or 1
	pairs     entitle.Set // what its token holds
	changed   bool        // its token is viewer's after the change
}

// dayScript is a deterministic random day: sessions opened on either
// instance daySpacing slots apart, each living dayLife slots or more,
// subscribing (to a pair it does not hold too), querying, unsubscribing
// after dayMinLife slots or more, and closing, some with subscriptions
// still open. Each step takes the first free slot at or after the one
// planned for it, after the session's earlier steps. It plans from the
// truth table of dayPairs; what happens is what the test then records.
// Mid-day, viewer, refused NZX quotes in a session before, is given them
// with the CLI (stepEntitle), and a session of viewer with a new login
// subscribes to them.
func dayScript(seed uint64) ([]daySession, []dayStep) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var sessions []daySession
	var steps []dayStep
	taken := map[int]bool{}
	place := func(slot int, st dayStep) int {
		for taken[slot] {
			slot++
		}
		taken[slot], st.slot = true, slot
		steps = append(steps, st)
		return slot
	}
	for i := range daySessions {
		p := dayPrincipals[rng.IntN(len(dayPrincipals))]
		s := daySession{principal: p, instance: rng.IntN(2), pairs: dayPairs(p)}
		sessions = append(sessions, s)
		last := place(i*daySpacing+rng.IntN(daySpacing), dayStep{kind: stepOpen, session: i})
		closeAt := last + dayLife + rng.IntN(dayLife)
		type held struct {
			topic string
			slot  int
		}
		var holding []held
		var tried []string
		for range 1 + rng.IntN(4) {
			// Two thirds of the Subs are of a pair the principal holds,
			// so that subscriptions overlap; the others are mostly
			// refused.
			topics := dayTopics
			if rng.IntN(3) > 0 {
				topics = slices.DeleteFunc(slices.Clone(dayTopics), func(tp string) bool {
					return !entitledTo(s.pairs, topicOf(tp), symbolOf(tp))
				})
			}
			topic := topics[rng.IntN(len(topics))]
			if slices.Contains(tried, topic) {
				continue // a second Sub of a topic replaces the first: no new subscription
			}
			tried = append(tried, topic)
			last = place(last+1+rng.IntN(4), dayStep{kind: stepSub, session: i, topic: topic})
			if entitledTo(s.pairs, topicOf(topic), symbolOf(topic)) {
				holding = append(holding, held{topic, last})
			}
			if rng.IntN(2) == 0 {
				last = place(last+1+rng.IntN(4), dayStep{kind: stepQuery, session: i, query: rng.IntN(len(dayQueries))})
			}
		}
		for _, h := range holding {
			if rng.IntN(3) > 0 { // the others end with the session
				last = place(max(last+1, h.slot+dayMinLife)+rng.IntN(4), dayStep{kind: stepUnsub, session: i, topic: h.topic})
			}
			closeAt = max(closeAt, h.slot+dayMinLife)
		}
		place(max(last+1, closeAt), dayStep{kind: stepClose, session: i})
	}

	// viewer: refused NZX quotes (and reading no row of the venue table)
	// before the change, holding them after it, with a new login.
	before, after := len(sessions), len(sessions)+1
	sessions = append(sessions, daySession{principal: "viewer", instance: 0, pairs: demoPairs["viewer"]},
		daySession{principal: "viewer", instance: 1, pairs: dayChanged, changed: true})
	change := daySessions * daySpacing / 2
	last := place(change/2, dayStep{kind: stepOpen, session: before})
	last = place(last+1, dayStep{kind: stepSub, session: before, topic: "Security!AIR.NZX"})
	last = place(last+1, dayStep{kind: stepQuery, session: before, query: 0})
	place(last+1, dayStep{kind: stepClose, session: before})
	place(change, dayStep{kind: stepEntitle, session: after})
	last = place(change+dayChangeWait, dayStep{kind: stepOpen, session: after})
	sub := place(last+1, dayStep{kind: stepSub, session: after, topic: "Security!AIR.NZX"})
	last = place(sub+1, dayStep{kind: stepSub, session: after, topic: "Depth!AIR.NZX"})
	last = place(last+1, dayStep{kind: stepQuery, session: after, query: 0})
	last = place(max(last+1, sub+dayMinLife), dayStep{kind: stepUnsub, session: after, topic: "Security!AIR.NZX"})
	place(last+1, dayStep{kind: stepClose, session: after})

	slices.SortFunc(steps, func(a, b dayStep) int { return a.slot - b.slot })
	return sessions, steps
}

func topicOf(topic string) string  { t, _, _ := strings.Cut(topic, "!"); return t }
func symbolOf(topic string) string { _, s, _ := strings.Cut(topic, "!"); return s }
