package wsauth

// Attacks on the live-session features (re-authentication, expiry,
// revocation, scope shrink, subscription tracking, reserved
// TransactionIDs, entitlement limits) the way an attacker makes them:
// pipelined, many messages in one TCP write, racing the transitions. The
// first two found bugs, now fixed: a client that kept the backend leg
// backed up kept an expired or revoked identity its authority (the
// supervisor only ever tried the session's lock), and a revocation
// signalled while a session authenticated was missed (the check time was
// taken after the verification).

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// --- helpers ---------------------------------------------------------------

// atkPipeline writes msgs as text frames in ONE write to the socket.
func atkPipeline(t testing.TB, c *websocket.Conn, msgs ...string) {
	t.Helper()
	var buf []byte
	for _, m := range msgs {
		buf = append(buf, afFrame(wsframe.FinalBit|websocket.TextMessage, []byte(m))...)
	}
	if _, err := c.NetConn().Write(buf); err != nil {
		t.Fatalf("pipelined write: %v", err)
	}
}

// atkReadUntil reads messages until one equals marker, returning those
// before it.
func atkReadUntil(t testing.TB, c *websocket.Conn, marker string) []string {
	t.Helper()
	var got []string
	for range 100_000 {
		m := readMsg(t, c)
		if m == marker {
			return got
		}
		got = append(got, m)
	}
	t.Fatal("marker never came")
	return nil
}

type atkEnv struct {
	Controller    string
	Topic         string
	Action        string
	TransactionID json.RawMessage
}

// atkBackendSubs replays what the backend received as a backend that
// keys subscriptions by Controller and Topic would: it returns the most
// subscriptions held at once and those held at the end.
func atkBackendSubs(msgs []string) (maxHeld int, held map[string]bool) {
	held = map[string]bool{}
	for _, m := range msgs {
		var env atkEnv
		if json.Unmarshal([]byte(m), &env) != nil {
			continue
		}
		if env.Controller == "" {
			env.Controller = zenith.DefaultController
		}
		k := env.Controller + "/" + env.Topic
		switch env.Action {
		case zenith.ActionSub:
			held[k] = true
		case zenith.ActionUnsub:
			delete(held, k)
		}
		maxHeld = max(maxHeld, len(held))
	}
	return maxHeld, held
}

// atkSession is the gateway's only session.
func atkSession(t testing.TB, e *testEnv) *session {
	t.Helper()
	var s *session
	eventually(t, "one session", func() bool {
		e.gw.mu.Lock()
		defer e.gw.mu.Unlock()
		if len(e.gw.sessions) != 1 {
			return false
		}
		for x := range e.gw.sessions {
			s = x
		}
		return true
	})
	return s
}

// gatedBackend is a backend whose upgrade waits for gate: a backend slow
// to accept (under load, far away). Once upgraded it echoes every message.
type gatedBackend struct {
	srv     *httptest.Server
	entered chan struct{} // one value per upgrade request
	gate    chan struct{} // closed: upgrades proceed
	once    sync.Once
}

func newGatedBackend(t testing.TB) *gatedBackend {
	b := &gatedBackend{entered: make(chan struct{}, 16), gate: make(chan struct{})}
	up := websocket.Upgrader{Subprotocols: []string{DefaultSubprotocol, "ZenithJson"}}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.entered <- struct{}{}
		select {
		case <-b.gate:
		case <-time.After(20 * time.Second):
			http.Error(w, "timeout", http.StatusServiceUnavailable)
			return
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			typ, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if c.WriteMessage(typ, msg) != nil {
				return
			}
		}
	}))
	t.Cleanup(func() { b.open(); b.srv.Close() })
	return b
}

func (b *gatedBackend) open()       { b.once.Do(func() { close(b.gate) }) }
func (b *gatedBackend) url() string { return "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/zenith" }

// gatedVerifier wraps a fakeVerifier; a verification of hold decides
// (asks the inner verifier) at once, then waits for release before it
// answers: a verifier whose answer is in flight (a remote introspection,
// a slow database read) when the revocation lands.
type gatedVerifier struct {
	inner   *fakeVerifier
	hold    string
	decided chan struct{}
	release chan struct{}
}

func (v *gatedVerifier) VerifyAccessToken(ctx context.Context, token string) (Identity, error) {
	id, err := v.inner.VerifyAccessToken(ctx, token)
	if token == v.hold && err == nil {
		select {
		case v.decided <- struct{}{}:
		default:
		}
		select {
		case <-v.release:
		case <-ctx.Done():
		}
	}
	return id, err
}

// atkArmed waits until the supervisor has taken the signal and asked for
// the next one, then for a few more walks.
func atkArmed(t testing.TB, sig *changes) {
	t.Helper()
	eventually(t, "the supervisor re-armed after the signal", func() bool {
		sig.mu.Lock()
		defer sig.mu.Unlock()
		return sig.ch != nil
	})
	time.Sleep(10 * testTick)
}

// atkStillLive reports whether the session keeps its authority for 10 s:
// it sends an Echo every 100 ms until one is refused (Error/Authority, or
// a Reject pushed), and returns true, with the last echo, if none is. The
// failure it catches kept the authority for RecheckInterval (an hour);
// a loaded machine may take a few walks of the supervisor to end it.
func atkStillLive(t testing.TB, c *websocket.Conn) (bool, string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for tid := 777; time.Now().Before(deadline); tid++ {
		echo := `{"Controller":"Market","Topic":"Echo","TransactionID":` + strconv.Itoa(tid) + `}`
		if err := c.WriteMessage(websocket.TextMessage, []byte(echo)); err != nil {
			t.Fatal(err)
		}
		for m := ""; m != echo; {
			m = readMsg(t, c)
			if strings.Contains(m, `"Result":"Reject"`) || strings.Contains(m, `"Data":"Authority"`) {
				return false, m
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true, "an Echo forwarded after 10 s"
}

// --- the two that found bugs ---------------------------------------------------

// TestRevocationSignalledDuringAuthentication: with RevocationsChanged
// set and a long RecheckInterval, a token revoked (and the revocation
// signalled) while a session authenticates with it, after the verifier
// accepted it, loses its authority at once: the session's check time is
// when the verifier was asked, before the signal, so the token is due
// again. It failed when the check time was taken after the verification
// (after the backend dial, for a first authentication): the revoked token
// kept its authority for the RecheckInterval, here an hour.
func TestRevocationSignalledDuringAuthentication(t *testing.T) {
	for _, how := range []string{"header auth, slow backend dial", "AuthToken, slow backend dial", "re-AuthToken, verifier answer in flight"} {
		t.Run(how, func(t *testing.T) {
			sig := new(changes)
			gb := newGatedBackend(t)
			fv := &fakeVerifier{}
			tok := madeUpToken("u-victim", []string{policy.ScopeMarket}, 24*time.Hour)
			gv := &gatedVerifier{inner: fv, decided: make(chan struct{}, 1), release: make(chan struct{})}
			t.Cleanup(func() {
				select {
				case <-gv.release:
				default:
					close(gv.release)
				}
			})
			reauth := strings.HasPrefix(how, "re-")
			e, _ := newLiveEnv(t, func(c *Config) {
				c.Live.RecheckInterval = time.Hour
				c.Hooks.RevocationsChanged = sig.wait
				c.Hooks.Verifier = gv
				if !reauth {
					c.Backend.Upstreams = []string{gb.url()}
				}
			})
			var c *websocket.Conn
			switch {
			case reauth:
				first := madeUpToken("u-victim", []string{policy.ScopeMarket}, 24*time.Hour, "first")
				c = e.dial(bearer(first))
				gv.hold = tok
				if err := c.WriteMessage(websocket.TextMessage, []byte(authToken("Bearer", tok))); err != nil {
					t.Fatal(err)
				}
				<-gv.decided
			case strings.HasPrefix(how, "header"):
				c = e.dial(bearer(tok))
			default:
				c = e.dial(nil)
				if err := c.WriteMessage(websocket.TextMessage, []byte(authToken("Bearer", tok))); err != nil {
					t.Fatal(err)
				}
			}
			if !reauth {
				select {
				case <-gb.entered:
				case <-time.After(5 * time.Second):
					t.Fatal("the backend dial never came")
				}
			}
			// The revocation lands; the verifier signals it.
			fv.refuse(tok, &Refusal{Reason: "revoked"})
			sig.fire()
			atkArmed(t, sig)
			if reauth {
				close(gv.release)
			} else {
				gb.open()
			}
			if !strings.HasPrefix(how, "header") {
				if got := readMsg(t, c); !strings.Contains(got, `"Result":"Success"`) {
					t.Fatalf("authentication: %s", got)
				}
			}
			if _, err := fv.VerifyAccessToken(context.Background(), tok); err == nil {
				t.Fatal("the verifier does not refuse the token: the test cannot tell")
			}
			if live, m := atkStillLive(t, c); live {
				t.Fatalf("a token revoked (and RevocationsChanged signalled) during its authentication keeps full authority "+
					"(until RecheckInterval): the session still forwards (%s)", m)
			}
		})
	}
}

// --- attacks that held ------------------------------------------------------

// TestAttackSubBurstOneWrite: HELD. Hundreds of Sub/Unsub (duplicates,
// Unsubs of topics never held, re-Subs) pipelined in a few TCP writes never
// let the backend hold more subscriptions than the limit, and the
// gateway's count equals what the backend holds at the end.
func TestAttackSubBurstOneWrite(t *testing.T) {
	const limit = 5
	e := newTestEnv(t, func(c *Config) {
		c.Limits.Default = policy.Limits{Subscriptions: limit, MessagesPerSecond: 1e6, Burst: 1 << 20}
	})
	c := e.dial(bearer(tokDemo))
	rng := rand.New(rand.NewPCG(1, 2))
	tid := 1000
	for round := range 8 {
		var msgs []string
		for range 200 {
			topic := "Security!T" + strconv.Itoa(rng.IntN(12))
			tid++
			if rng.IntN(3) == 0 {
				msgs = append(msgs, unsubMsg("Market", topic, tid))
			} else {
				msgs = append(msgs, subMsg("Market", topic, tid))
			}
		}
		marker := `{"Controller":"Market","Topic":"Echo","TransactionID":` + strconv.Itoa(round) + `}`
		msgs = append(msgs, marker)
		atkPipeline(t, c, msgs...)
		atkReadUntil(t, c, marker)
	}
	maxHeld, held := atkBackendSubs(e.backend.received())
	if maxHeld > limit {
		t.Fatalf("the backend held %d subscriptions at once, limit %d", maxHeld, limit)
	}
	s := atkSession(t, e)
	s.mu.Lock()
	n := len(s.subs.msgs)
	s.mu.Unlock()
	gauge := e.metrics.get(func(m *fakeMetrics) int { return m.subs["Market"] })
	if n != len(held) || gauge != len(held) {
		t.Fatalf("gateway tracks %d (gauge %d), backend holds %d", n, gauge, len(held))
	}
}

// TestAttackReservedTransactionIDSpellings: HELD. No spelling of a
// TransactionID (number forms, strings, escaped or case-variant names,
// duplicates) reaches the backend such that a lenient parser (Go's
// encoding/json, case-insensitive, float64) reads a reserved value.
func TestAttackReservedTransactionIDSpellings(t *testing.T) {
	const r = "9007199254000001"
	spellings := []string{
		`"TransactionID":` + r,
		`"TransactionID":-` + r,
		`"TransactionID":` + r + `.0`,
		`"TransactionID":9.007199254000001e15`,
		`"TransactionID":9007199254000001e0`,
		`"TransactionID":90071992540000010e-1`,
		`"TransactionID":90071992540000010E-1`,
		`"TransactionID":0` + r,
		`"TransactionID":"` + r + `"`,
		`"TransactionID":  ` + r + `  `,
		`"TransactionID":9007199254740993`,
		`"TransactionID":18446744073709551616`,
		`"TransactionID":1e400`,
		`"TransactionID":-0`,
		`"transactionID":` + r,
		`"TransactionId":` + r,
		`"TRANSACTIONID":` + r,
		`"Transaction_ID":` + r,
		`"Transaction\u0049D":` + r,
		`"\u0054ransactionID":` + r,
		`"TransactionID":1,"TransactionID":` + r,
		`"TransactionID":1,"transactionid":` + r,
		`"TransactionID ":` + r,
		`"Data":{"TransactionID":` + r + `},"TransactionID":1`,
	}
	e := newTestEnv(t, func(c *Config) { c.Limits.Default = policy.Limits{MessagesPerSecond: 1e6, Burst: 1 << 20} })
	c := e.dial(bearer(tokDemo))
	var msgs []string
	for _, sp := range spellings {
		msgs = append(msgs, `{"Controller":"Market","Topic":"Echo",`+sp+`}`, `{"Controller":"Market","Topic":"Security!X","Action":"Sub",`+sp+`}`)
	}
	marker := `{"Controller":"Market","Topic":"Echo","TransactionID":5}`
	atkPipeline(t, c, append(msgs, marker)...)
	atkReadUntil(t, c, marker)
	for _, m := range e.backend.received() {
		var v map[string]any
		d := json.NewDecoder(strings.NewReader(m))
		if d.Decode(&v) != nil {
			continue
		}
		for k, x := range v {
			if !strings.EqualFold(strings.ReplaceAll(k, "_", ""), "transactionid") {
				continue
			}
			var f float64
			switch x := x.(type) {
			case float64:
				f = x
			case string:
				f, _ = strconv.ParseFloat(x, 64)
			}
			if f < 0 {
				f = -f
			}
			if f >= float64(schemeInt53.base) && f < float64(schemeInt53.base+schemeInt53.span) {
				t.Errorf("the backend got a reserved TransactionID: %s", m)
			}
		}
	}
}

// TestAttackScopeShrinkPipelined: HELD. A Sub and a Publish for News
// pipelined in the same TCP write right behind the AuthToken that drops
// News are refused; the subscription made just before is ended at the
// backend; nothing for News reaches the backend after the AuthToken.
func TestAttackScopeShrinkPipelined(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	c := e.dial(bearer(tokDemo))
	narrow := madeUpToken("u-demo", []string{policy.ScopeMarket}, 24*time.Hour)
	var msgs []string
	msgs = append(msgs, subMsg("News", "News!A", 1), authToken("Bearer", narrow))
	for i := range 30 {
		msgs = append(msgs, subMsg("News", "News!B"+strconv.Itoa(i), 100+i), `{"Controller":"News","Topic":"QueryNews","TransactionID":`+strconv.Itoa(200+i)+`}`)
	}
	marker := `{"Controller":"Market","Topic":"Echo","TransactionID":9}`
	atkPipeline(t, c, append(msgs, marker)...)
	atkReadUntil(t, c, marker)
	eventually(t, "the gateway's Unsub of News!A", func() bool { return e.backend.gatewayUnsubs("News", "News!A") == 1 })
	got := e.backend.received()
	for _, m := range got {
		if strings.Contains(m, `"News!B`) || strings.Contains(m, "QueryNews") {
			t.Fatalf("a News message after the narrowing AuthToken reached the backend: %s", m)
		}
	}
	if _, held := atkBackendSubs(got); len(held) != 0 {
		t.Fatalf("the backend still holds %v", held)
	}
}

// TestAttackOtherSubjectPipelined: HELD. An AuthToken for another
// subject with more scopes, pipelined with Trading messages, changes
// nothing: the Trading messages are refused.
func TestAttackOtherSubjectPipelined(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	c := e.dial(bearer(tokDemo))
	var msgs []string
	for i := range 8 { // the Auth bucket's burst is 10
		msgs = append(msgs, authToken("Bearer", tokTrader),
			`{"Controller":"Trading","Topic":"PlaceOrder","TransactionID":`+strconv.Itoa(i)+`}`,
			subMsg("Trading", "Orders!A"+strconv.Itoa(i), 50+i))
	}
	marker := `{"Controller":"Market","Topic":"Echo","TransactionID":9}`
	atkPipeline(t, c, append(msgs, marker)...)
	atkReadUntil(t, c, marker)
	for _, m := range e.backend.received() {
		if strings.Contains(m, "Trading") {
			t.Fatalf("reached the backend: %s", m)
		}
	}
	if got := roundTrip(t, c, queryIdentify); !strings.Contains(got, `"UserID":"u-demo"`) || strings.Contains(got, "Trading") {
		t.Fatalf("identity changed: %s", got)
	}
}

// TestAttackExpiryRace: HELD. While a client pipelines Sub/Unsub/
// Publish as fast as it can, its authority expires: at the backend no
// client message follows the gateway's first Unsub, and the backend holds
// nothing afterwards; a fresh token then restores exactly the gateway's
// tracked subscriptions. Repeated with several lapses.
func TestAttackExpiryRace(t *testing.T) {
	for round := range 4 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			e, clock := newLiveEnv(t, func(c *Config) {
				c.Limits.Default = policy.Limits{Subscriptions: 8, MessagesPerSecond: 1e6, Burst: 1 << 20}
			})
			c := e.dial(bearer(tokDemo))
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				rng := rand.New(rand.NewPCG(uint64(round), 7))
				tid := 0
				for i := 0; i < 400; i++ {
					select {
					case <-stop:
						return
					default:
					}
					var msgs []string
					for range 20 {
						tid++
						topic := "Security!T" + strconv.Itoa(rng.IntN(10))
						switch rng.IntN(3) {
						case 0:
							msgs = append(msgs, unsubMsg("Market", topic, tid))
						case 1:
							msgs = append(msgs, subMsg("Market", topic, tid))
						default:
							msgs = append(msgs, `{"Controller":"Market","Topic":"Echo","TransactionID":`+strconv.Itoa(tid)+`}`)
						}
					}
					var buf []byte
					for _, m := range msgs {
						buf = append(buf, afFrame(wsframe.FinalBit|websocket.TextMessage, []byte(m))...)
					}
					if _, err := c.NetConn().Write(buf); err != nil {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}()
			// Drain the client's replies meanwhile.
			readDone := make(chan struct{})
			go func() {
				defer close(readDone)
				_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
				for {
					_, m, err := c.ReadMessage()
					if err != nil || bytes.Contains(m, []byte(`"TransactionID":-77`)) {
						return
					}
				}
			}()
			time.Sleep(30 * time.Millisecond)
			clock.set(testExpiry)
			eventually(t, "the lapse", func() bool { return e.lapses(LapseExpired) == 1 })
			time.Sleep(50 * time.Millisecond)
			close(stop)
			<-done
			atkPipeline(t, c, `{"Controller":"Market","Topic":"Echo","TransactionID":-77}`)
			<-readDone
			time.Sleep(100 * time.Millisecond)
			got := e.backend.received()
			first := -1
			for i, m := range got {
				if strings.Contains(m, `"TransactionID":9007199254`) {
					first = i
					break
				}
			}
			if first >= 0 {
				for _, m := range got[first:] {
					if !strings.Contains(m, `"TransactionID":9007199254`) {
						t.Fatalf("a client message reached the backend after the lapse's Unsubs: %s", m)
					}
				}
			}
			if _, held := atkBackendSubs(got); len(held) != 0 {
				t.Fatalf("after the lapse the backend still holds %v", held)
			}
			clock.set(testNow)
			later := madeUpToken("u-demo", []string{policy.ScopeMarket, policy.ScopeNews}, 24*time.Hour)
			marker := `{"Controller":"Market","Topic":"Echo","TransactionID":-5}`
			atkPipeline(t, c, authToken("Bearer", later), marker)
			atkReadUntil(t, c, marker)
			time.Sleep(50 * time.Millisecond)
			s := atkSession(t, e)
			s.mu.Lock()
			tracked := map[string]bool{}
			for k := range s.subs.msgs {
				tracked[k.controller+"/"+k.topic] = true
			}
			s.mu.Unlock()
			_, held := atkBackendSubs(e.backend.received())
			if len(held) != len(tracked) {
				t.Fatalf("after resuming the backend holds %v, the gateway tracks %v", held, tracked)
			}
			for k := range held {
				if !tracked[k] {
					t.Fatalf("the backend holds %s, untracked", k)
				}
			}
		})
	}
}

// TestAttackGracePeriodSpam: HELD. During the grace period, pipelined
// Subs, Publishes and Unsubs are all refused (nothing reaches the backend)
// and the socket closes with 1008 when the grace ends.
func TestAttackGracePeriodSpam(t *testing.T) {
	e, clock := newLiveEnv(t, func(c *Config) {
		c.Live.ExpiryGrace = time.Minute
		c.Limits.Default = policy.Limits{MessagesPerSecond: 1e6, Burst: 1 << 20}
	})
	c := e.dial(bearer(tokDemo))
	subscribe(t, c, "Market", "Security!A", 1)
	clock.set(testExpiry)
	eventually(t, "the lapse", func() bool { return e.backend.gatewayUnsubs("Market", "Security!A") == 1 })
	before := len(e.backend.received())
	var msgs []string
	for i := range 200 {
		msgs = append(msgs, subMsg("Market", "Security!B"+strconv.Itoa(i%7), i), `{"Controller":"Market","Topic":"Echo"}`,
			unsubMsg("Market", "Security!A", i), `{"Controller":"Auth","Topic":"AuthToken","TransactionID":1,"Data":{"Provider":"Bearer","AccessToken":"forged"}}`)
	}
	atkPipeline(t, c, msgs[:400]...)
	time.Sleep(100 * time.Millisecond)
	if n := len(e.backend.received()); n != before {
		t.Fatalf("%d messages reached the backend during the grace", n-before)
	}
	clock.set(testExpiry.Add(time.Minute + time.Second))
	if got := closeCode(t, c); got != websocket.ClosePolicyViolation {
		t.Fatalf("close code %d, want 1008", got)
	}
}

// TestAttackRateLimitFragments: HELD. Messages fragmented into many
// frames, with pings between the fragments, dozens per TCP write, are each
// one message for the rate limit: exactly Burst are forwarded.
func TestAttackRateLimitFragments(t *testing.T) {
	const burst = 5
	e := newTestEnv(t, func(c *Config) { c.Limits.Default = policy.Limits{MessagesPerSecond: 0.001, Burst: burst} })
	c := e.dial(bearer(tokDemo))
	var buf []byte
	const n = 60
	for i := range n {
		m := []byte(`{"Controller":"Market","Topic":"Echo","TransactionID":` + strconv.Itoa(i) + `}`)
		a, b := m[:10], m[10:20]
		buf = append(buf, afFrame(websocket.TextMessage, a)...)
		buf = append(buf, afFrame(wsframe.FinalBit|websocket.PingMessage, []byte("p"))...)
		buf = append(buf, afFrame(0, b)...)
		buf = append(buf, afFrame(wsframe.FinalBit|websocket.PongMessage, nil)...)
		buf = append(buf, afFrame(wsframe.FinalBit, m[20:])...)
		// and a tiny one
		buf = append(buf, afFrame(wsframe.FinalBit|websocket.TextMessage, []byte(`{"Topic":"Echo","Controller":"Market"}`))...)
	}
	if _, err := c.NetConn().Write(buf); err != nil {
		t.Fatal(err)
	}
	got := 0
	for range 2 * n {
		if m := readMsg(t, c); !strings.Contains(m, `"Limited"`) {
			got++
		}
	}
	if got != burst {
		t.Fatalf("%d messages forwarded, want %d", got, burst)
	}
	if f := len(e.backend.received()); f != burst {
		t.Fatalf("the backend got %d, want %d", f, burst)
	}
}

// TestAttackNoGoroutineLeak: HELD. Sessions that subscribe, lapse,
// re-authenticate and vanish (no close frame) leave no goroutine behind,
// and the gauges return to zero.
func TestAttackNoGoroutineLeak(t *testing.T) {
	e, clock := newLiveEnv(t, nil)
	c0 := e.dial(bearer(tokDemo)) // starts the supervisor
	subscribe(t, c0, "Market", "Security!Z", 1)
	time.Sleep(50 * time.Millisecond)
	base := goroutines()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _, err := e.tryDial(bearer(tokDemo), nil)
			if err != nil {
				t.Error(err)
				return
			}
			msgs := []string{subMsg("Market", "Security!A", i), subMsg("News", "News!B", i)}
			var buf []byte
			for _, m := range msgs {
				buf = append(buf, afFrame(wsframe.FinalBit|websocket.TextMessage, []byte(m))...)
			}
			_, _ = c.NetConn().Write(buf)
			time.Sleep(30 * time.Millisecond)
			c.NetConn().Close()
		}()
	}
	wg.Wait()
	clock.set(testExpiry)
	eventually(t, "the first session's lapse", func() bool { return e.lapses(LapseExpired) >= 1 })
	later := madeUpToken("u-demo", []string{policy.ScopeMarket}, 24*time.Hour)
	if got := roundTrip(t, c0, authToken("Bearer", later)); !strings.Contains(got, "Success") {
		t.Fatal(got)
	}
	readMsg(t, c0)
	c0.Close()
	eventually(t, "every session ended", func() bool { return e.sessions() == 0 })
	eventually(t, "goroutines back to the baseline", func() bool { return goroutines() <= base })
	for _, st := range []State{StateUnauthenticated, StateAuthenticated, StateExpired} {
		if n := e.gauge(st); n != 0 {
			t.Fatalf("gauge %s = %d", st, n)
		}
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.subs["Market"] + m.subs["News"] }); n != 0 {
		t.Fatalf("subscriptions gauge %d", n)
	}
}

// throttledBackend reads one message every per (a backend that takes that
// long to process a message) and records each message's "Seq" (its
// TransactionID).
type throttledBackend struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seqs []int64
	stop chan struct{}
}

func newThrottledBackend(t testing.TB, per time.Duration) *throttledBackend {
	b := &throttledBackend{stop: make(chan struct{})}
	up := websocket.Upgrader{Subprotocols: []string{DefaultSubprotocol, "ZenithJson"}}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadLimit(8 << 20)
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			env, err := zenith.Scan(msg)
			if err == nil {
				b.mu.Lock()
				b.seqs = append(b.seqs, env.TransactionID)
				b.mu.Unlock()
			}
			select {
			case <-time.After(per):
			case <-b.stop:
				return
			}
		}
	}))
	t.Cleanup(func() { close(b.stop); b.srv.Close() })
	return b
}

func (b *throttledBackend) url() string {
	return "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/zenith"
}

func (b *throttledBackend) maxSeq() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := int64(-1)
	for _, s := range b.seqs {
		m = max(m, s)
	}
	return m
}

// TestLapseUnderBackendBackpressure: the client reader holds the session's
// lock while it writes a full batch to the backend leg (forward,
// wsframe.Conn.AppendFrame: a message of 64 KiB or more is written at
// once), so a client that keeps the leg backed up (64 KiB messages at
// 40/s, within the default size and rate limits, faster than the backend
// reads them) keeps the lock busy almost all the time. Its identity's
// expiry, or the revocation of its token, still ends its authority within
// the default intervals: the supervisor, finding the lock busy, has a
// goroutine of the session's wait for it (whenFree). It failed when the
// supervisor only tried the lock: the session stayed live, and its
// messages were forwarded, for as long as the client kept the leg backed
// up.
func TestLapseUnderBackendBackpressure(t *testing.T) {
	for _, what := range []string{"expiry", "revocation"} {
		t.Run(what, func(t *testing.T) {
			tb := newThrottledBackend(t, 100*time.Millisecond) // a backend taking 100 ms per message
			// The default supervisor intervals (1 s walks, 3 s rechecks).
			e, clock := newLiveEnv(t, func(c *Config) {
				c.Backend.Upstreams = []string{tb.url()}
				c.Live.SuperviseInterval, c.Live.RecheckInterval = DefaultSuperviseInterval, DefaultRecheckInterval
			})
			tok := madeUpToken("u-flood", []string{policy.ScopeMarket}, 24*time.Hour)
			c := e.dial(bearer(tok))
			s := atkSession(t, e)
			pad := strings.Repeat("x", 64<<10)
			stop, flooded := make(chan struct{}), make(chan struct{})
			t.Cleanup(func() {
				select {
				case <-stop:
				default:
					close(stop)
				}
				<-flooded
			})
			var sent atomic.Int64 // the last seq written, whole
			sent.Store(-1)
			go func() {
				defer close(flooded)
				tick := time.NewTicker(25 * time.Millisecond) // 40 msg/s: under the default 50/s
				defer tick.Stop()
				for seq := 0; seq < 2000; seq++ {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					msg := `{"Controller":"Market","Topic":"Echo","TransactionID":` + strconv.Itoa(seq) + `,"Data":"` + pad + `"}`
					_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
					if c.WriteMessage(websocket.TextMessage, []byte(msg)) != nil {
						return
					}
					sent.Store(int64(seq))
				}
			}()
			// Wait until the leg is backed up: the lock busy most of the time.
			busy := false
			for range 40 {
				ok, n := 0, 0
				for range 100 {
					n++
					if s.mu.TryLock() {
						ok++
						s.mu.Unlock()
					}
					time.Sleep(time.Millisecond)
				}
				if ok*10 < n {
					busy = true
					break
				}
			}
			if !busy {
				t.Fatal("could not back the backend leg up: the test shows nothing")
			}
			if what == "expiry" {
				clock.set(testExpiry.Add(24 * time.Hour)) // the token's expiry
			} else {
				e.ver.refuse(tok, &Refusal{Reason: "revoked"})
			}
			// Expiry takes effect within SuperviseInterval, a revocation
			// within RecheckInterval + SuperviseInterval (and the write in
			// progress, which holds the lock).
			limit := time.Now().Add(DefaultRecheckInterval + DefaultSuperviseInterval + 2*time.Second)
			lapsed := func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				return s.auth.standing != authLive
			}
			for !lapsed() && time.Now().Before(limit) {
				time.Sleep(50 * time.Millisecond)
			}
			mark := sent.Load() + 1 // written after the authority should have ended
			live := !lapsed()
			close(stop)
			<-flooded
			if !live {
				if n := e.lapses(LapseExpired) + e.lapses(LapseRevoked); n != 1 {
					t.Fatalf("%d lapses counted, want 1", n)
				}
				return
			}
			evidence := ""
			if what == "expiry" {
				// The backlog drains: did a message written after the
				// limit reach the backend?
				for range 300 {
					if got := tb.maxSeq(); got >= mark {
						evidence = "; a message the client wrote after that (#" + strconv.FormatInt(mark, 10) + ") reached the backend"
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			t.Fatalf("%v after its %s (default intervals) the session is still live%s: "+
				"the supervisor never got the lock the client reader holds while writing to the backed-up backend leg",
				DefaultRecheckInterval+DefaultSuperviseInterval+2*time.Second, what, evidence)
		})
	}
}
