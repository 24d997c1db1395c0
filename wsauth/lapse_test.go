package wsauth

import (
	"bytes"
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

// TestExpiryUnderPipelinedSubscriptions: While a client pipelines Sub/Unsub/
// Publish as fast as it can, its authority expires: at the backend no
// client message follows the gateway's first Unsub, and the backend holds
// nothing afterwards; a fresh token then restores exactly the gateway's
// tracked subscriptions. Repeated with several lapses.
func TestExpiryUnderPipelinedSubscriptions(t *testing.T) {
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
						buf = append(buf, handFrame(wsframe.FinalBit|websocket.TextMessage, []byte(m))...)
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
			writePipelined(t, c, `{"Controller":"Market","Topic":"Echo","TransactionID":-77}`)
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
			if _, held := backendSubs(got); len(held) != 0 {
				t.Fatalf("after the lapse the backend still holds %v", held)
			}
			clock.set(testNow)
			later := madeUpToken("u-demo", []string{policy.ScopeMarket, policy.ScopeNews}, 24*time.Hour)
			marker := `{"Controller":"Market","Topic":"Echo","TransactionID":-5}`
			writePipelined(t, c, authToken("Bearer", later), marker)
			readUntil(t, c, marker)
			time.Sleep(50 * time.Millisecond)
			s := onlySession(t, e)
			s.mu.Lock()
			tracked := map[string]bool{}
			for k := range s.subs.msgs {
				tracked[k.controller+"/"+k.topic] = true
			}
			s.mu.Unlock()
			_, held := backendSubs(e.backend.received())
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

// TestGracePeriodRefusesEveryMessage: During the grace period, pipelined
// Subs, Publishes and Unsubs are all refused (nothing reaches the backend)
// and the socket closes with 1008 when the grace ends.
func TestGracePeriodRefusesEveryMessage(t *testing.T) {
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
	writePipelined(t, c, msgs[:400]...)
	time.Sleep(100 * time.Millisecond)
	if n := len(e.backend.received()); n != before {
		t.Fatalf("%d messages reached the backend during the grace", n-before)
	}
	clock.set(testExpiry.Add(time.Minute + time.Second))
	if got := closeCode(t, c); got != websocket.ClosePolicyViolation {
		t.Fatalf("close code %d, want 1008", got)
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
	t.Parallel() // its own env in each subtest; ~6 s each, mostly waiting
	for _, what := range []string{"expiry", "revocation"} {
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			tb := newThrottledBackend(t, 100*time.Millisecond) // a backend taking 100 ms per message
			// The default supervisor intervals (1 s walks, 3 s rechecks).
			e, clock := newLiveEnv(t, func(c *Config) {
				c.Backend.Upstreams = []string{tb.url()}
				c.Live.SuperviseInterval, c.Live.RecheckInterval = DefaultSuperviseInterval, DefaultRecheckInterval
			})
			tok := madeUpToken("u-flood", []string{policy.ScopeMarket}, 24*time.Hour)
			c := e.dial(bearer(tok))
			s := onlySession(t, e)
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
