package wsauth

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// venueEnv is a live env whose gateway checks entitlements against the
// default venue table, the backend serving ASX and NZX; Market/Echo (the
// fake backend's marker) carries no market data.
func venueEnv(t testing.TB, mod ...func(*Config)) *testEnv {
	t.Helper()
	v, err := policy.NewVenues(policy.VenueConfig{
		Rules:  []policy.VenueRule{{Controller: "Market", Topic: "Echo", In: policy.VenueNone}},
		Venues: map[string][]string{"quotes": {"ASX", "NZX"}, "depth": {"ASX", "NZX"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newLiveEnv(t, func(c *Config) {
		c.Venues = v
		for _, m := range mod {
			m(c)
		}
	})
	return e
}

// entToken is a made-up token of u-trader with the Market scope and the
// pairs (space-separated); extra makes it distinct.
func entToken(pairs string, extra ...string) string {
	return madeUpToken("u-trader", []string{policy.ScopeMarket}, 24*time.Hour,
		append([]string{"ent=" + strings.ReplaceAll(pairs, " ", "+")}, extra...)...)
}

const echoMarker = `{"Controller":"Market","Topic":"Echo","TransactionID":9}`

// TestVenuesOnTheSocket: a Sub or a query naming a venue whose feed the
// session does not hold is answered Error/Authority and never reaches the
// backend, whatever spelling tries to get past the grammar; an Unsub is
// never refused; QueryIdentify lists the session's pairs. It failed when
// the check let Subs through (only queries were checked).
func TestVenuesOnTheSocket(t *testing.T) {
	e := venueEnv(t)
	c := e.dial(bearer(entToken("ASX:quotes")))
	subscribe(t, c, "Market", "Security!BHP.ASX", 1)
	subscribe(t, c, "Market", "Trades!BHP.ASX", 2)
	refused := []string{
		subMsg("Market", "Security!AIR.NZX", 3),
		subMsg("Market", "Depth!BHP.ASX", 4),
		subMsg("Market", "Security!bhp.asx", 5),
		subMsg("Market", "Security!BHP.ASX!NZX", 6),
		subMsg("Market", "Security!BHP.NZX.ASX", 7),
		subMsg("Market", "Security!.ASX", 8),
		subMsg("Market", "Security!BHP.\uff21SX", 9),
		`{"Controller":"Market","Topic":"QuerySecurity","TransactionID":10,"Data":{"Market":"NZX","Code":"AIR"}}`,
		`{"Controller":"Market","Topic":"QuerySecurity","TransactionID":11,"Data":{"Market":"ASX","market":"NZX"}}`,
		`{"Controller":"Market","Topic":"QuerySymbols","TransactionID":12,"Data":{"SearchText":"A"}}`,
		`{"Controller":"Market","Topic":"Search","TransactionID":13}`,
	}
	for _, m := range refused {
		got := roundTrip(t, c, m)
		if !strings.Contains(got, `"Action":"Error"`) || !strings.HasSuffix(got, `"Data":"Authority"}`) {
			t.Errorf("%s:\n got %s\nwant Error/Authority", m, got)
		}
	}
	held := `{"Controller":"Market","Topic":"QuerySecurity","TransactionID":20,"Data":{"Market":"ASX","Code":"BHP"}}`
	writePipelined(t, c, held, unsubMsg("Market", "Security!AIR.NZX", 21), echoMarker)
	if got := readUntil(t, c, echoMarker); len(got) != 1 || !strings.Contains(got[0], `"Unsub"`) {
		t.Errorf("a query of a held venue and an Unsub were answered %q, want the backend's answer to the Unsub", got)
	}
	if e.backend.countExact(held) != 1 {
		t.Error("a query of a held venue did not reach the backend")
	}
	for _, m := range e.backend.received() {
		if strings.Contains(m, `NZX"`) && !strings.Contains(m, `"Unsub"`) || strings.Contains(m, "Depth") || strings.Contains(m, "bhp") ||
			strings.Contains(m, `"Search"`) || strings.Contains(m, "QuerySymbols") || strings.Contains(m, `"market"`) {
			t.Errorf("reached the backend: %s", m)
		}
	}
	if e.backend.countExact(unsubMsg("Market", "Security!AIR.NZX", 21)) != 1 {
		t.Error("an Unsub of an unheld venue was refused: a client must always be able to unsubscribe")
	}
	if got := roundTrip(t, c, queryIdentify); !strings.Contains(got, `"Entitlements":["ASX:quotes"]`) {
		t.Errorf("QueryIdentify does not list the pairs: %s", got)
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.denied["Market"] }); n != len(refused) {
		t.Errorf("denied counted %d, want %d", n, len(refused))
	}
}

// TestNoVenueTableChecksNoVenue: without Config.Venues nothing changes:
// every venue is open to the Market scope and Identify lists no pairs.
func TestNoVenueTableChecksNoVenue(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	c := e.dial(bearer(entToken("")))
	subscribe(t, c, "Market", "Security!AIR.NZX", 1)
	subscribe(t, c, "Market", "Depth!BHP.ASX", 2)
	if got := roundTrip(t, c, queryIdentify); strings.Contains(got, "Entitlements") {
		t.Errorf("QueryIdentify lists pairs with no venue table: %s", got)
	}
}

// TestFewerPairsEndExactlyTheirSubscriptions: an AuthToken with fewer
// pairs, and then a re-verification of it that answers fewer still (its
// user lost NZX), each end exactly the subscriptions that lost their
// right, with the scope-shrink sequence (Error/Authority, a server Unsub
// with Confirm, the gateway's Unsub at the backend); the others keep
// flowing, and a re-verification never widens what the session holds. It
// failed when a re-verification took the verifier's answer whole instead
// of its intersection with what the session held.
func TestFewerPairsEndExactlyTheirSubscriptions(t *testing.T) {
	e := venueEnv(t)
	c := e.dial(bearer(entToken("ASX:quotes ASX:depth NZX:quotes NZX:depth")))
	topics := []string{"Security!BHP.ASX", "Depth!BHP.ASX", "Security!AIR.NZX", "Depth!AIR.NZX"}
	for i, tp := range topics {
		subscribe(t, c, "Market", tp, 10+i)
	}
	ended := func(tp string, tid int) []string {
		return []string{errorMsg("Market", tp, tid, "Authority"),
			`{"Controller":"Market","Topic":"` + tp + `","Action":"Unsub","TransactionID":` + strconv.Itoa(tid) + `,"Confirm":true}`}
	}

	// A fresh credential without NZX:depth.
	three := entToken("ASX:quotes ASX:depth NZX:quotes")
	c.WriteMessage(1, []byte(authToken("Bearer", three)))
	reply := readMsg(t, c)
	if !strings.Contains(reply, `"Entitlements":["ASX:depth","ASX:quotes","NZX:quotes"]`) {
		t.Fatalf("AuthToken reply: %s", reply)
	}
	sameSet(t, "after the AuthToken", readN(t, c, 2), ended("Depth!AIR.NZX", 13))
	eventually(t, "the gateway's Unsub of Depth!AIR.NZX", func() bool { return e.backend.gatewayUnsubs("Market", "Depth!AIR.NZX") == 1 })

	// The user loses NZX: the verifier answers the same token without it.
	e.ver.narrowTo(three, entitle.MustParse("ASX:quotes ASX:depth"))
	sameSet(t, "after the narrowing", readN(t, c, 2), ended("Security!AIR.NZX", 12))
	eventually(t, "the gateway's Unsub of Security!AIR.NZX", func() bool { return e.backend.gatewayUnsubs("Market", "Security!AIR.NZX") == 1 })
	writePipelined(t, c, subMsg("Market", "Security!FPH.NZX", 30), echoMarker)
	if got := readUntil(t, c, echoMarker); len(got) != 1 || got[0] != errorMsg("Market", "Security!FPH.NZX", 30, "Authority") {
		t.Fatalf("a Sub of NZX after the narrowing: %q", got)
	}

	// A re-verification that answers more does not widen.
	e.ver.narrowTo(three, entitle.MustParse("ASX:quotes ASX:depth NZX:quotes NZX:depth"))
	time.Sleep(3 * testRecheck)
	if got := roundTrip(t, c, subMsg("Market", "Security!FPH.NZX", 31)); got != errorMsg("Market", "Security!FPH.NZX", 31, "Authority") {
		t.Fatalf("a re-verification widened the session: %s", got)
	}
	for _, tp := range []string{"Security!BHP.ASX", "Depth!BHP.ASX"} {
		if n := e.backend.gatewayUnsubs("Market", tp); n != 0 {
			t.Errorf("%s was unsubscribed %d times: only the NZX subscriptions lost their right", tp, n)
		}
	}
	_, held := backendSubs(e.backend.received())
	if len(held) != 2 || !held["Market/Security!BHP.ASX"] || !held["Market/Depth!BHP.ASX"] {
		t.Errorf("the backend holds %v, want the two ASX subscriptions", held)
	}
	if got := roundTrip(t, c, queryIdentify); !strings.Contains(got, `"Entitlements":["ASX:depth","ASX:quotes"]`) {
		t.Errorf("QueryIdentify after the narrowing: %s", got)
	}
	// A fresh credential widens again.
	c.WriteMessage(1, []byte(authToken("Bearer", entToken("ASX:quotes NZX:quotes", "fresh"))))
	readMsg(t, c)
	sameSet(t, "after the AuthToken without ASX:depth", readN(t, c, 2), ended("Depth!BHP.ASX", 11))
	subscribe(t, c, "Market", "Security!FPH.NZX", 32)
}

// TestNarrowingRacesPipelinedSubs: Subs of NZX pipelined while a
// re-verification takes NZX away: once the narrowing has happened, the
// backend holds no NZX subscription: each Sub was either refused or
// tracked before the narrowing, which ended it (the check and the
// tracking are made under the lock the narrowing takes). It failed when
// the narrowing changed the pairs without ending the subscriptions.
func TestNarrowingRacesPipelinedSubs(t *testing.T) {
	e := venueEnv(t, func(c *Config) {
		c.Limits.Default.Subscriptions, c.Limits.Default.Burst, c.Limits.Default.MessagesPerSecond = 2000, 2000, 1000
	})
	tok := entToken("ASX:quotes NZX:quotes")
	c := e.dial(bearer(tok))
	subscribe(t, c, "Market", "Security!BHP.ASX", 1)
	for round := range 5 {
		var msgs []string
		for i := range 200 {
			msgs = append(msgs, subMsg("Market", "Security!S"+strconv.Itoa(round*1000+i)+".NZX", 100+i))
		}
		if round == 2 {
			e.ver.narrowTo(tok, entitle.MustParse("ASX:quotes"))
		}
		writePipelined(t, c, append(msgs, echoMarker)...)
		readUntil(t, c, echoMarker)
	}
	eventually(t, "the narrowing", func() bool {
		return strings.Contains(roundTrip(t, c, queryIdentify), `"Entitlements":["ASX:quotes"]`)
	})
	writePipelined(t, c, echoMarker)
	readUntil(t, c, echoMarker)
	eventually(t, "no NZX subscription at the backend", func() bool {
		_, held := backendSubs(e.backend.received())
		for k := range held {
			if strings.Contains(k, ".NZX") {
				return false
			}
		}
		return len(held) == 1
	})
}
