package wsauth

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// TestReservedTransactionIDFromClient: a client message whose
// TransactionID's digits begin with the reserved prefix is refused with
// Error/Session and not forwarded (nor, for a Sub, tracked).
func TestReservedTransactionIDFromClient(t *testing.T) {
	for _, tt := range []struct {
		tid     string
		refused bool
	}{
		{"9007199254000000", true},
		{"9007199254740990", true},
		{"9007199254", true},
		{"-9007199254000001", true},
		{"900719925", false},
		{"1900719925400000", false},
		{"9007199253999999", false},
		{"0", false},
		{"900719925474099100", true}, // past 2^53 - 1 too: malformed
	} {
		t.Run(tt.tid, func(t *testing.T) {
			e := newTestEnv(t, nil)
			c := e.dial(bearer(tokDemo))
			for _, action := range []string{zenith.ActionPublish, zenith.ActionSub} {
				msg := `{"Controller":"Market","Topic":"Echo","Action":"` + action + `","TransactionID":` + tt.tid + `}`
				got := roundTrip(t, c, msg)
				want := msg
				switch {
				case len(strings.TrimPrefix(tt.tid, "-")) > 16: // past 2^53 - 1
					want = `{"Controller":"Market","Topic":"Echo","Action":"Error","Data":"Data.Deserialise"}`
				case tt.refused:
					want = `{"Controller":"Market","Topic":"Echo","Action":"Error","TransactionID":` + tt.tid + `,"Data":"Session"}`
				case action == zenith.ActionSub:
					want = `{"Controller":"Market","Topic":"Echo","Action":"Publish","TransactionID":` + tt.tid + `,"Data":"snapshot"}`
				}
				if got != want {
					t.Fatalf("%s:\n got %s\nwant %s", action, got, want)
				}
				if n := e.backend.countExact(msg); tt.refused == (n != 0) {
					t.Fatalf("%s reached the backend %d times", action, n)
				}
			}
			if n := e.metrics.get(func(m *fakeMetrics) int { return m.subs["Market"] }); tt.refused == (n != 0) {
				t.Fatalf("subscriptions tracked: %d", n)
			}
		})
	}
}

// TestBackendAnswersToTheGatewayAreDropped: once the gateway has sent the
// backend a message of its own, backend messages carrying a reserved
// TransactionID never reach the client; others do, in order.
func TestBackendAnswersToTheGatewayAreDropped(t *testing.T) {
	tests := []struct {
		name, msg string
		dropped   bool
	}{
		{"the gateway's Unsub confirmed", `{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Unsub","TransactionID":9007199254000001,"Confirm":true}`, true},
		{"one space after the colon", `{"Controller":"Market","TransactionID": 9007199254000002}`, true},
		{"first member, highest", `{"TransactionID":9007199254740990,"Controller":"Market"}`, true},
		{"after an earlier near miss", `{"Data":9007199254,"TransactionID":9007199254000003}`, true},
		{"the client's own", `{"Controller":"Market","TransactionID":9007199253}`, false},
		{"the digits in a string", `{"Controller":"Market","Data":"TransactionID 9007199254000001"}`, false},
		{"another member", `{"Controller":"Market","OrderID":9007199254000001}`, false},
		{"negative", `{"Controller":"Market","TransactionID":-9007199254000001}`, false},
		{"a longer prefix", `{"Controller":"Market","TransactionID":19007199254000001}`, false},
	}
	for _, tt := range tests {
		if got := answersGateway([]byte(tt.msg), schemeInt53.prefix); got != tt.dropped {
			t.Errorf("%s: answersGateway = %v", tt.name, got)
		}
	}
	for _, tt := range []struct {
		msg     string
		dropped bool
	}{ // int32's
		{`{"Controller":"Market","Action":"Unsub","TransactionID":-2147483648,"Confirm":true}`, true},
		{`{"TransactionID": -2147400000}`, true},
		{`{"TransactionID":-2147399999}`, false},
		{`{"TransactionID":2147483647}`, false},
		{`{"TransactionID":9007199254000001}`, false},
	} {
		if got := answersGateway([]byte(tt.msg), schemeInt32.prefix); got != tt.dropped {
			t.Errorf("int32, %s: answersGateway = %v", tt.msg, got)
		}
	}
	e := newTestEnv(t, nil)
	c := e.dial(bearer(tokDemo))
	says := make([]string, 0, len(tests)+1)
	var all, want []string
	for _, tt := range tests {
		says = append(says, strconv.Quote(tt.msg))
		all = append(all, tt.msg)
		if !tt.dropped {
			want = append(want, tt.msg)
		}
	}
	end := `{"Controller":"Zenith","Topic":"End"}`
	says = append(says, strconv.Quote(end))
	say := func() []string {
		t.Helper()
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Say","Data":[`+strings.Join(says, ",")+`]}`)); err != nil {
			t.Fatal(err)
		}
		var got []string
		for m := readMsg(t, c); m != end; m = readMsg(t, c) {
			got = append(got, m)
		}
		return got
	}
	// Before the gateway has sent the backend a message of its own,
	// nothing can answer it: the backend's messages are not searched.
	if got := say(); strings.Join(got, "\n") != strings.Join(all, "\n") {
		t.Fatalf("before the gateway's own message, the client got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(all, "\n"))
	}
	// The gateway sends its own Unsub, as at a lapse; from then on the
	// answers are dropped.
	e.gw.mu.Lock()
	for s := range e.gw.sessions {
		s.mu.Lock()
		if err := s.unsubBackendLocked(subKey{"Market", "Security!BHP.ASX"}); err != nil {
			t.Error(err)
		}
		if err := s.auth.bw.Flush(); err != nil {
			t.Error(err)
		}
		s.mu.Unlock()
	}
	e.gw.mu.Unlock()
	eventually(t, "the gateway's Unsub at the backend", func() bool { return e.backend.gatewayUnsubs("Market", "Security!BHP.ASX") == 1 })
	if got := say(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the client got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSubscriptionLimit: a Sub for a new subscription over the effective
// limit is answered Error/Limited and not forwarded; a re-Sub of one held
// is not limited, and an Unsub makes room.
func TestSubscriptionLimit(t *testing.T) {
	sub0 := len(subMsg("Market", "Security!S0", 0))
	for _, tt := range []struct {
		name  string
		mod   func(*Config)
		limit int
	}{
		{"config limit", func(c *Config) { c.Limits.Default.Subscriptions = 2 }, 2},
		{"override by client", func(c *Config) {
			c.Limits.Default.Subscriptions = 2
			c.Limits.Overrides = []policy.LimitOverride{{ClientID: "demo-app", Limits: policy.Limits{Subscriptions: 3}}}
		}, 3},
		{"override by scope", func(c *Config) {
			c.Limits.Default.Subscriptions = 2
			c.Limits.Overrides = []policy.LimitOverride{{Scope: policy.ScopeNews, Limits: policy.Limits{Subscriptions: 4}}, {Scope: policy.ScopeTrading, Limits: policy.Limits{Subscriptions: 9}}}
		}, 4},
		{"override for another client", func(c *Config) {
			c.Limits.Default.Subscriptions = 2
			c.Limits.Overrides = []policy.LimitOverride{{ClientID: "other-app", Limits: policy.Limits{Subscriptions: 5}}}
		}, 2},
		{"bytes kept", func(c *Config) { c.Limits.MaxSubscriptionBytes = int64(3*sub0 - 1) }, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, tt.mod)
			c := e.dial(bearer(tokDemo))
			for i := range tt.limit {
				subscribe(t, c, "Market", "Security!S"+strconv.Itoa(i), i)
			}
			over := "Security!S" + strconv.Itoa(tt.limit)
			if got, want := roundTrip(t, c, subMsg("Market", over, 99)), errorMsg("Market", over, 99, CodeLimited); got != want {
				t.Fatalf("Sub over the limit:\n got %s\nwant %s", got, want)
			}
			if n := e.backend.countExact(subMsg("Market", over, 99)); n != 0 {
				t.Fatal("the Sub over the limit reached the backend")
			}
			subscribe(t, c, "Market", "Security!S0", 0) // held: not limited
			if got, want := roundTrip(t, c, unsubMsg("Market", "Security!S0", 0)), `{"Controller":"Market","Topic":"Security!S0","Action":"Unsub","TransactionID":0,"Confirm":true}`; got != want {
				t.Fatalf("Unsub: %s", got)
			}
			subscribe(t, c, "Market", over, 99)
			if n := e.metrics.get(func(m *fakeMetrics) int { return m.limited[LimitSubscriptions] }); n != 1 {
				t.Fatalf("limited counted %d", n)
			}
			if n := e.metrics.get(func(m *fakeMetrics) int { return m.subs["Market"] }); n != tt.limit {
				t.Fatalf("subscriptions gauge %d, want %d", n, tt.limit)
			}
		})
	}
}

// TestRateLimit: past the bucket's burst, client messages are answered
// Error/Limited and not forwarded; Auth messages are not limited.
func TestRateLimit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		mod   func(*Config)
		burst int
	}{
		{"config limit", func(c *Config) { c.Limits.Default = policy.Limits{MessagesPerSecond: 0.001, Burst: 3} }, 3},
		{"override by scope", func(c *Config) {
			c.Limits.Default = policy.Limits{MessagesPerSecond: 0.001, Burst: 3}
			c.Limits.Overrides = []policy.LimitOverride{{Scope: policy.ScopeMarket, Limits: policy.Limits{Burst: 5}}}
		}, 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, tt.mod)
			c := e.dial(bearer(tokDemo))
			const over = 2
			for i := range tt.burst + over {
				if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Echo","TransactionID":`+strconv.Itoa(i)+`}`)); err != nil {
					t.Fatal(err)
				}
			}
			echoes, limited := 0, 0
			for _, m := range readN(t, c, tt.burst+over) {
				switch {
				case strings.HasSuffix(m, `"Data":"Limited"}`):
					limited++
				case strings.HasPrefix(m, `{"Controller":"Market","Topic":"Echo","TransactionID":`):
					echoes++
				default:
					t.Fatalf("unexpected %s", m)
				}
			}
			if echoes != tt.burst || limited != over {
				t.Fatalf("%d echoed, %d limited; want %d, %d", echoes, limited, tt.burst, over)
			}
			if got := roundTrip(t, c, queryIdentify); !strings.Contains(got, `"Result":"Success"`) {
				t.Fatalf("an Auth message was limited: %s", got)
			}
			if n := len(e.backend.received()); n != tt.burst {
				t.Fatalf("the backend received %d messages, want %d", n, tt.burst)
			}
			if n := e.metrics.get(func(m *fakeMetrics) int { return m.limited[LimitRate] }); n != over {
				t.Fatalf("limited counted %d", n)
			}
		})
	}
}

// TestRateLimitMalformed: a malformed message takes from the bucket as
// any other (its Error reply costs the gateway as much): past the burst,
// it is answered Error/Limited.
func TestRateLimitMalformed(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Limits.Default = policy.Limits{MessagesPerSecond: 0.001, Burst: 3} })
	c := e.dial(bearer(tokDemo))
	for i := range 5 {
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Echo","TransactionID":`+strconv.Itoa(i)+`,"Action":"Get"}`)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, m := range readN(t, c, 5) {
		_, data, _ := strings.Cut(m, `"Data":`)
		got = append(got, data)
	}
	if want := []string{`"Data.Deserialise"}`, `"Data.Deserialise"}`, `"Data.Deserialise"}`, `"Limited"}`, `"Limited"}`}; !slices.Equal(got, want) {
		t.Errorf("replies %q, want %q", got, want)
	}
}

// TestBucketRefills: the bucket refills at MessagesPerSecond, up to Burst.
func TestBucketRefills(t *testing.T) {
	l := policy.Limits{MessagesPerSecond: 10, Burst: 2}
	var b bucket
	t0 := time.Unix(1000, 0)
	for i, tt := range []struct {
		at time.Duration
		ok bool
	}{
		{0, true}, {0, true}, {0, false},
		{50 * time.Millisecond, false}, {100 * time.Millisecond, true}, {100 * time.Millisecond, false},
		{time.Hour, true}, {time.Hour, true}, {time.Hour, false},
	} {
		if got := b.take(t0.Add(tt.at), &l); got != tt.ok {
			t.Fatalf("take %d at %v: %v", i, tt.at, got)
		}
	}
}

// TestRequireTLS: on a connection that is not secure, require_tls
// withholds Trading and OrderPad from every identity the session takes,
// before the policy, the Identify replies and the backend headers.
func TestRequireTLS(t *testing.T) {
	secure := func(*http.Request) bool { return true }
	for _, tt := range []struct {
		name     string
		require  bool
		secure   func(*http.Request) bool
		auth     string // header, token, owner
		withheld bool
	}{
		{"plain, header auth", true, nil, "header", true},
		{"plain, AuthToken", true, nil, "token", true},
		{"plain, AuthOwner", true, nil, "owner", true},
		{"secure by the hook", true, secure, "header", false},
		{"secure by the hook, AuthToken", true, secure, "token", false},
		{"not required", false, nil, "header", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, func(c *Config) {
				c.Auth.RequireTLS, c.Hooks.Secure, c.Hooks.Passwords = tt.require, tt.secure, fakePasswords{}
			})
			var c *websocket.Conn
			owner := `{"Controller":"Auth","Topic":"AuthOwner","TransactionID":1,"Data":{"ClientID":"demo-app","Username":"trader","Password":"trader"}}`
			switch tt.auth {
			case "header":
				c = e.dial(bearer(tokTrader))
			case "token":
				c = dialAuthenticated(t, e, tokTrader, false)
			case "owner":
				c = e.dial(nil)
				if got := roundTrip(t, c, owner); !strings.Contains(got, `"Result":"Success"`) {
					t.Fatalf("AuthOwner: %s", got)
				}
			}
			check := func(when string) {
				t.Helper()
				got := roundTrip(t, c, queryIdentify)
				if has := strings.Contains(got, "Service.Trading"); has == tt.withheld {
					t.Fatalf("%s: Trading in the identity %v: %s", when, has, got)
				}
				for _, topic := range []string{"QueryAccounts", "PlaceOrder"} {
					msg := `{"Controller":"Trading","Topic":"` + topic + `","TransactionID":5}`
					before := e.backend.countExact(msg)
					if tt.withheld {
						if got := roundTrip(t, c, msg); got != errorMsg("Trading", topic, 5, zenith.CodeAuthority) {
							t.Fatalf("%s: %s: %s", when, topic, got)
						}
						continue
					}
					if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
						t.Fatal(err)
					}
					eventually(t, when+": "+topic+" forwarded", func() bool { return e.backend.countExact(msg) == before+1 })
				}
			}
			check("first")
			e.backend.mu.Lock()
			scopes := e.backend.headers[0].Get("X-Scopes")
			e.backend.mu.Unlock()
			if has := strings.Contains(scopes, policy.ScopeTrading) || strings.Contains(scopes, policy.ScopeOrderPad); has == tt.withheld {
				t.Fatalf("backend X-Scopes %q", scopes)
			}
			again := authToken("Bearer", tokTrader)
			if tt.auth == "owner" {
				again = owner
			}
			if got := roundTrip(t, c, again); !strings.Contains(got, `"Result":"Success"`) {
				t.Fatalf("re-authentication: %s", got)
			}
			check("after a re-authentication")
		})
	}
}

// TestAuthMessagesLimitedOnceAuthenticated: an authenticated session's Auth
// messages have a bucket of their own: past its burst they get Limited and
// reach no verifier, while other messages still pass.
func TestAuthMessagesLimitedOnceAuthenticated(t *testing.T) {
	e := newTestEnv(t, nil)
	c := e.dial(bearer(tokDemo))
	burst := authLimits.Burst
	for i := range burst + 3 {
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":`+strconv.Itoa(i)+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	limited := 0
	for _, m := range readN(t, c, burst+3) {
		if strings.HasSuffix(m, `"Data":"Limited"}`) {
			limited++
		}
	}
	if limited != 3 {
		t.Fatalf("%d Auth messages limited, want 3", limited)
	}
	echo := `{"Controller":"Market","Topic":"Echo","TransactionID":99}`
	if got := roundTrip(t, c, echo); got != echo {
		t.Fatalf("after the Auth burst: %s", got)
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.limited[LimitAuth] }); n != 3 {
		t.Fatalf("limited counted %d", n)
	}
}

// TestReadCapped: the client reader's message buffer holds what the reader
// gave, limit bytes at most, and grows no further than the limit (with the
// allocator's rounding): a message of just over half the limit does not
// get a buffer of twice its size.
func TestReadCapped(t *testing.T) {
	const limit = 1<<20 + 1
	for _, n := range []int{0, 1, 511, 512, 513, 64 << 10, limit/2 + 1, limit - 1, limit, limit + 5} {
		for _, oneByte := range []bool{false, true} {
			if oneByte && n > 70_000 {
				continue
			}
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(i * 31)
			}
			var r io.Reader = bytes.NewReader(src)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			got, err := readCapped(nil, r, limit)
			if err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			want := src[:min(n, limit)]
			if !bytes.Equal(got, want) {
				t.Fatalf("%d bytes (one at a time %v): got %d bytes, want %d", n, oneByte, len(got), len(want))
			}
			if cap(got) > limit+limit/8 {
				t.Fatalf("%d bytes: a buffer of %d, past the limit %d", n, cap(got), limit)
			}
		}
	}
	// A large message costs its buffer and the small ones grown on the way,
	// not the megabyte of buffers doubling would leave.
	src := make([]byte, limit-1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := readCapped(nil, bytes.NewReader(src), limit); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if a := after.TotalAlloc - before.TotalAlloc; a > limit+limit/8+128<<10 && !raceEnabled {
		t.Fatalf("reading %d bytes allocated %d", len(src), a)
	}
}

// TestRefusedLargeMessagesMakeLittleGarbage: a client repeating a Sub whose
// topic is too large to keep gets an Error/Limited that echoes it each
// time; the gateway reuses its buffers (the message's, the topic's, the
// reply's) instead of making a topic's worth of garbage a message, which
// is what lets the heap stay near what a slow client may hold at all.
func TestRefusedLargeMessagesMakeLittleGarbage(t *testing.T) {
	e := newTestEnv(t, nil)
	c := e.dial(bearer(tokDemo))
	topic := "Security!" + strings.Repeat("X", 600<<10)
	msg := []byte(`{"Controller":"Market","Topic":"` + topic + `","Action":"Sub","TransactionID":7}`)
	round := func() {
		t.Helper()
		if err := c.WriteMessage(websocket.TextMessage, msg); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, r, err := c.NextReader()
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 64)
		n, _ := io.ReadFull(r, head)
		if !bytes.HasPrefix(head[:n], []byte(`{"Controller":"Market","Topic":"Security!XXX`)) {
			t.Fatalf("reply %q…, want the Error echoing the topic", head[:n])
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		round()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const rounds = 30
	for range rounds {
		round()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / rounds; per > uint64(len(topic))/4 && !raceEnabled {
		t.Fatalf("%d bytes allocated per refused %d-byte message", per, len(msg))
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.limited[LimitSubscriptions] }); n < rounds {
		t.Fatalf("%d refusals counted, want %d or more", n, rounds)
	}
}

// TestNonReadingSenderIsNotRead: a client that sends large messages and
// reads nothing stops being read once its queue lacks room for another
// reply besides what the reader holds: the reader never waits with a reply
// beyond the queue (before, it read on, and each time its queue was full
// it held the reply it could not queue, for write_timeout), and the
// session is closed as slow once the queue stops moving.
func TestNonReadingSenderIsNotRead(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.Transport.SendQueueBytes, c.Transport.WriteTimeout = 4<<20, time.Second
	})
	c := e.dial(bearer(tokDemo))
	msg := []byte(`{"Controller":"Market","Topic":"Security!` + strings.Repeat("X", 600<<10) + `","Action":"Sub","TransactionID":7}`)
	go func() {
		for {
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if c.WriteMessage(websocket.TextMessage, msg) != nil {
				return
			}
		}
	}()
	var s *session
	eventually(t, "the session", func() bool {
		e.gw.mu.Lock()
		defer e.gw.mu.Unlock()
		for x := range e.gw.sessions {
			s = x
		}
		return s != nil
	})
	eventually(t, "the slow client to be closed", func() bool {
		return e.metrics.get(func(m *fakeMetrics) int { return m.slow }) == 1
	})
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.limited[LimitSubscriptions] }); n < 2 {
		t.Fatalf("%d messages refused before the close: the scenario did not run", n)
	}
	if n := s.in.replyWaits.Load(); n != 0 {
		t.Fatalf("the client reader waited %d times with a reply beyond the queue", n)
	}
}
