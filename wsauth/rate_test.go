package wsauth

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// TestFragmentedMessagesCountOnceForTheRate: Messages fragmented into many
// frames, with pings between the fragments, dozens per TCP write, are each
// one message for the rate limit: exactly Burst are forwarded.
func TestFragmentedMessagesCountOnceForTheRate(t *testing.T) {
	const burst = 5
	e := newTestEnv(t, func(c *Config) { c.Limits.Default = policy.Limits{MessagesPerSecond: 0.001, Burst: burst} })
	c := e.dial(bearer(tokDemo))
	var buf []byte
	const n = 60
	for i := range n {
		m := []byte(`{"Controller":"Market","Topic":"Echo","TransactionID":` + strconv.Itoa(i) + `}`)
		a, b := m[:10], m[10:20]
		buf = append(buf, handFrame(websocket.TextMessage, a)...)
		buf = append(buf, handFrame(wsframe.FinalBit|websocket.PingMessage, []byte("p"))...)
		buf = append(buf, handFrame(0, b)...)
		buf = append(buf, handFrame(wsframe.FinalBit|websocket.PongMessage, nil)...)
		buf = append(buf, handFrame(wsframe.FinalBit, m[20:])...)
		// and a tiny one
		buf = append(buf, handFrame(wsframe.FinalBit|websocket.TextMessage, []byte(`{"Topic":"Echo","Controller":"Market"}`))...)
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
