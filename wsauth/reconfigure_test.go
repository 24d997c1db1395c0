package wsauth

import (
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// reconfigured is the configuration the gateway was built with, changed
// by mod.
func reconfigured(e *testEnv, mod func(*Config)) Config {
	cfg := e.cfg
	mod(&cfg)
	return cfg
}

// noNews is a policy that refuses every News message.
func noNews(t testing.TB) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Config{Rules: []policy.Rule{{Controller: "News", Topic: "*", Deny: true}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReconfigureNarrowsPolicy: a Reconfigure whose policy refuses News
// keeps the session: its News subscription ends as a scope lost at a
// re-authentication does (Error/Authority, then a server Unsub, to the
// client; the gateway's Unsub to the backend), its Market one keeps
// flowing, and a new News Sub is refused. It failed when Reconfigure only
// swapped the configuration (no refit): the News subscription went on.
func TestReconfigureNarrowsPolicy(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	c := dialAuthenticated(t, e, tokDemo, false)
	subscribe(t, c, "Market", "Security!BHP.ASX", 21)
	subscribe(t, c, "News", "News!ASX", 22)

	r, err := e.gw.Reconfigure(reconfigured(e, func(c *Config) { c.Policy = noNews(t) }))
	if err != nil {
		t.Fatal(err)
	}
	if r.Sessions != 1 {
		t.Errorf("Reconfigure found %d sessions, want 1", r.Sessions)
	}
	msgs := readN(t, c, 2)
	errMsg := errorMsg("News", "News!ASX", 22, zenith.CodeAuthority)
	unsub := `{"Controller":"News","Topic":"News!ASX","Action":"Unsub","TransactionID":22,"Confirm":true}`
	if msgs[0] != errMsg || msgs[1] != unsub {
		t.Fatalf("after the reconfiguration:\n got %q\nwant %q, %q", msgs, errMsg, unsub)
	}
	eventually(t, "the backend's Unsub of News!ASX", func() bool { return e.backend.gatewayUnsubs("News", "News!ASX") == 1 })
	if n := e.backend.gatewayUnsubs("Market", "Security!BHP.ASX"); n != 0 {
		t.Fatalf("the Market subscription was ended (%d Unsubs)", n)
	}
	subscribe(t, c, "Market", "Security!RIO.ASX", 23)
	if got, want := roundTrip(t, c, subMsg("News", "News!NZX", 24)), errorMsg("News", "News!NZX", 24, zenith.CodeAuthority); got != want {
		t.Fatalf("News Sub after the reconfiguration: %s", got)
	}
}

// TestReconfigureLowersLimit: over a lowered subscription limit the
// newest subscriptions end with Error/Limited and a server Unsub, the
// oldest stays. It failed when the refit skipped the limit: all three
// stayed.
func TestReconfigureLowersLimit(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	c := dialAuthenticated(t, e, tokDemo, false)
	for i, topic := range []string{"Security!A.ASX", "Security!B.ASX", "Security!C.ASX"} {
		subscribe(t, c, "Market", topic, 31+i)
	}
	r, err := e.gw.Reconfigure(reconfigured(e, func(c *Config) { c.Limits.Default.Subscriptions = 1 }))
	if err != nil {
		t.Fatal(err)
	}
	if r.Changed != 1 {
		t.Errorf("Reconfigure changed %d sessions, want 1", r.Changed)
	}
	newestTwoEnded(t, e, c, "after the lowered limit")
	// The new limit holds for new Subs too.
	if got, want := roundTrip(t, c, subMsg("Market", "Security!D.ASX", 34)), errorMsg("Market", "Security!D.ASX", 34, CodeLimited); got != want {
		t.Fatalf("a Sub over the new limit: %s", got)
	}
}

// newestTwoEnded checks that of the session's subscriptions to A, B and
// C (TransactionIDs 31 to 33), the newest two ended over a lowered bound
// (Error/Limited and a server Unsub each, to the client; the gateway's
// Unsubs to the backend), and A alone is held.
func newestTwoEnded(t *testing.T, e *testEnv, c *websocket.Conn, what string) {
	t.Helper()
	sameSet(t, what, readN(t, c, 4), []string{
		errorMsg("Market", "Security!C.ASX", 33, CodeLimited),
		`{"Controller":"Market","Topic":"Security!C.ASX","Action":"Unsub","TransactionID":33,"Confirm":true}`,
		errorMsg("Market", "Security!B.ASX", 32, CodeLimited),
		`{"Controller":"Market","Topic":"Security!B.ASX","Action":"Unsub","TransactionID":32,"Confirm":true}`,
	})
	eventually(t, "the backend's Unsubs", func() bool {
		return e.backend.gatewayUnsubs("Market", "Security!B.ASX") == 1 && e.backend.gatewayUnsubs("Market", "Security!C.ASX") == 1
	})
	if _, held := backendSubs(e.backend.received()); len(held) != 1 || !held["Market/Security!A.ASX"] {
		t.Fatalf("the backend holds %v, want only Security!A.ASX", held)
	}
}

// TestReconfigureLowersSubscriptionBytes: under a lowered
// MaxSubscriptionBytes that holds the copies of one subscription and a
// half, the two newest end with Error/Limited and a server Unsub, the
// oldest stays. It failed when the refit checked only the count: all
// three stayed, over the new bound, until the session ended.
func TestReconfigureLowersSubscriptionBytes(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	c := dialAuthenticated(t, e, tokDemo, false)
	for i, topic := range []string{"Security!A.ASX", "Security!B.ASX", "Security!C.ASX"} {
		subscribe(t, c, "Market", topic, 31+i)
	}
	one := int64(len(subMsg("Market", "Security!A.ASX", 31)) + len("Security!A.ASX"))
	if _, err := e.gw.Reconfigure(reconfigured(e, func(c *Config) { c.Limits.MaxSubscriptionBytes = one * 3 / 2 })); err != nil {
		t.Fatal(err)
	}
	newestTwoEnded(t, e, c, "after the lowered bound")
}

// TestReconfigureSwapsVerifier: after a Reconfigure the session is
// verified by the new verifier and ended by the new revocation signal,
// not the old one's; AuthToken on it asks the new verifier. It failed
// when the supervisor was not restarted: it went on waiting on the old
// signal, and the revocation was not applied.
func TestReconfigureSwapsVerifier(t *testing.T) {
	oldSig, newSig := new(changes), new(changes)
	e, _ := newLiveEnv(t, func(c *Config) {
		c.Live.SuperviseInterval, c.Live.RecheckInterval = time.Hour, time.Hour
		c.Hooks.RevocationsChanged = oldSig.wait
	})
	tok := madeUpToken("u-kept", []string{policy.ScopeMarket}, 24*time.Hour)
	c := e.dial(bearer(tok))
	subscribe(t, c, "Market", "Security!BHP.ASX", 1)
	waitArmed(t, oldSig)

	v2 := &fakeVerifier{}
	if _, err := e.gw.Reconfigure(reconfigured(e, func(c *Config) {
		c.Hooks.Verifier, c.Hooks.RevocationsChanged = v2, newSig.wait
	})); err != nil {
		t.Fatal(err)
	}
	waitArmed(t, newSig)
	// The new verifier checks every session again at the restart.
	eventually(t, "the new verifier asked", func() bool { return v2.calls.Load() > 0 })
	v2.refuse(tok, &Refusal{Reason: "revoked"})
	oldSig.fire()
	time.Sleep(20 * testTick)
	if e.lapses(LapseRevoked) != 0 {
		t.Fatal("the old configuration's signal was still waited on")
	}
	before := e.ver.calls.Load()
	newSig.fire()
	eventually(t, "the revocation", func() bool { return e.lapses(LapseRevoked) == 1 })
	for m := ""; !strings.Contains(m, `"Result":"Reject"`); {
		m = readMsg(t, c) // the revocation's Identify push
	}
	fresh := madeUpToken("u-kept", []string{policy.ScopeMarket}, 24*time.Hour, "fresh")
	calls := v2.calls.Load()
	if got := roundTrip(t, c, authToken("Bearer", fresh)); !strings.Contains(got, `"Result":"Success"`) {
		t.Fatalf("AuthToken after the revocation: %s", got)
	}
	if v2.calls.Load() == calls || e.ver.calls.Load() != before {
		t.Fatalf("AuthToken asked the new verifier %d times, the old %d times", v2.calls.Load()-calls, e.ver.calls.Load()-before)
	}
	readUntil(t, c, snapshot("Market", "Security!BHP.ASX", 1))
}

// TestReconfigureRefusesLegChange: a configuration with another upstream
// or another transport is ErrNotLive, and changes nothing.
func TestReconfigureRefusesLegChange(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	c := dialAuthenticated(t, e, tokDemo, false)
	subscribe(t, c, "News", "News!ASX", 1)
	for name, mod := range map[string]func(*Config){
		"upstream":      func(c *Config) { c.Backend.Upstreams = []string{"ws://127.0.0.1:1/zenith"}; c.Policy = noNews(t) },
		"ping interval": func(c *Config) { c.Transport.PingInterval = time.Second; c.Policy = noNews(t) },
	} {
		if _, err := e.gw.Reconfigure(reconfigured(e, mod)); !errors.Is(err, ErrNotLive) {
			t.Fatalf("%s changed: %v, want ErrNotLive", name, err)
		}
	}
	subscribe(t, c, "News", "News!NZX", 2)
}

// TestReconfigureAdmissionLive: a Reconfigure that changes only the
// admission settings (the allowed origins, the sub-protocols, compression)
// keeps the session, which goes on receiving, and the next upgrades take
// the new settings: the newly allowed origin and sub-protocol are
// accepted, the origin no longer listed is refused with 403. It failed
// when the whole Transport had to be unchanged (ErrNotLive: every session
// of the handler closed for an origin added), and when the Upgrader built
// by New stayed in force (the new sub-protocol not chosen, compression
// still negotiated).
func TestReconfigureAdmissionLive(t *testing.T) {
	e, _ := newLiveEnv(t, func(c *Config) { c.Transport.AllowedOrigins = []string{"https://old.example"} })
	c := dialAuthenticated(t, e, tokDemo, false)
	subscribe(t, c, "News", "News!ASX", 1)

	_, err := e.gw.Reconfigure(reconfigured(e, func(c *Config) {
		c.Transport.AllowedOrigins = []string{"https://new.example"}
		c.Transport.Subprotocols = []string{"zenith.v2", DefaultSubprotocol}
		c.Transport.DisableCompression = true
	}))
	if err != nil {
		t.Fatalf("admission settings changed: %v", err)
	}
	subscribe(t, c, "News", "News!NZX", 2)

	d := &websocket.Dialer{Subprotocols: []string{"zenith.v2"}, HandshakeTimeout: 5 * time.Second, EnableCompression: true}
	nc, resp, err := e.tryDial(http.Header{"Origin": {"https://new.example"}}, d)
	if err != nil {
		t.Fatalf("the newly allowed origin: %v (%v)", err, resp)
	}
	defer nc.Close()
	if got := nc.Subprotocol(); got != "zenith.v2" {
		t.Errorf("sub-protocol %q, want the newly listed zenith.v2", got)
	}
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); ext != "" {
		t.Errorf("compression off, yet the upgrade answered %q", ext)
	}
	if _, resp, err := e.tryDial(http.Header{"Origin": {"https://old.example"}}, nil); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the origin no longer listed: %v (%v), want 403", err, resp)
	}
}

// TestReconfigureBetweenCheckAndForward: a Sub the client reader allowed
// under the old policy, and that reaches the session's lock only after the
// swap and the refit, is refused by the new policy there (Error/Authority)
// and never reaches the backend. The test holds the session's lock to put
// the Sub between the two. It failed without forwardLocked's check: the
// Sub was forwarded after the refit, and the backend kept it.
func TestReconfigureBetweenCheckAndForward(t *testing.T) {
	e, _ := newLiveEnv(t, func(c *Config) { c.Live.SuperviseInterval = time.Hour })
	c := dialAuthenticated(t, e, tokDemo, false)
	subscribe(t, c, "Market", "Security!BHP.ASX", 1)
	s := onlySession(t, e)
	s.mu.Lock()
	if err := c.WriteMessage(websocket.TextMessage, []byte(subMsg("News", "News!ASX", 2))); err != nil {
		s.mu.Unlock()
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the client reader waits for the lock, the policy's check behind it
	go func() {
		// Its pass finds the lock busy; the supervisor's look waits for it.
		if _, err := e.gw.Reconfigure(reconfigured(e, func(c *Config) { c.Policy = noNews(t) })); err != nil {
			t.Error(err)
		}
	}()
	eventually(t, "the new configuration in force", func() bool { return !allowsNews(e.gw.cfg()) })
	s.refitLocked(e.gw.cfg()) // the refit, before the forward
	s.mu.Unlock()
	if got, want := readMsg(t, c), errorMsg("News", "News!ASX", 2, zenith.CodeAuthority); got != want {
		t.Fatalf("the Sub allowed before the swap: %s", got)
	}
	subscribe(t, c, "Market", "Security!RIO.ASX", 3) // after anything the backend was sent
	if n := e.backend.countExact(subMsg("News", "News!ASX", 2)); n != 0 {
		t.Fatalf("the News Sub reached the backend %d times", n)
	}
}

func allowsNews(c *Config) bool {
	ok, _ := c.Policy.Allowed([]string{policy.ScopeNews}, "News", "News!ASX")
	return ok
}

// TestReconfigureRacesForwards: News Subs pipelined while a Reconfigure
// refuses News, at varying moments: the backend holds none of them at
// the end (the refit ends those forwarded before it, the new policy
// refuses the others). Under -race it also checks the swap against the
// sessions' readers.
func TestReconfigureRacesForwards(t *testing.T) {
	for round := range 20 {
		e, _ := newLiveEnv(t, nil)
		c := dialAuthenticated(t, e, tokDemo, false)
		var msgs []string
		for i := range 60 { // with their replies and the refit's, within the send queue
			msgs = append(msgs, subMsg("News", "News!N"+strings.Repeat("x", i%7)+string(rune('A'+i%26)), 100+i))
		}
		marker := `{"Controller":"Market","Topic":"Echo","TransactionID":9}`
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(time.Duration(round%5) * time.Millisecond)
			if _, err := e.gw.Reconfigure(reconfigured(e, func(c *Config) { c.Policy = noNews(t) })); err != nil {
				t.Error(err)
			}
		}()
		writePipelined(t, c, append(msgs, marker)...)
		readUntil(t, c, marker)
		<-done
		// Whatever the refit ended, the backend gets its Unsub.
		s := onlySession(t, e)
		eventually(t, "the refit and its Unsubs", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.subs.fitted == e.gw.cfg().gen && len(s.subs.owed) == 0
		})
		eventually(t, "the backend holds no News", func() bool {
			_, held := backendSubs(e.backend.received())
			return len(held) == 0
		})
	}
}

// TestDrainSpreads: Drain closes the live sessions with the code given,
// spread over the window (none before it starts, one at its start, the
// last in its last quarter, all by its end), and refuses new upgrades
// with 503 meanwhile. It failed with Shutdown, which closes them all at
// once.
func TestDrainSpreads(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	const n, window = 4, 800 * time.Millisecond
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		conns[i] = dialAuthenticated(t, e, tokDemo, true)
	}
	eventually(t, "every session tracked", func() bool { return e.sessions() == n })
	type closed struct {
		code int
		at   time.Duration
	}
	start := time.Now()
	ends := make(chan closed, n)
	for _, c := range conns {
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					code := -1
					if ce, ok := err.(*websocket.CloseError); ok {
						code = ce.Code
					}
					ends <- closed{code, time.Since(start)}
					return
				}
			}
		}()
	}
	drained := make(chan int, 1)
	go func() { drained <- e.gw.Drain(websocket.CloseServiceRestart, window) }()
	time.Sleep(50 * time.Millisecond)
	if _, resp, err := e.tryDial(bearer(tokDemo), nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("an upgrade during the drain: %v, %v; want 503", err, resp)
	}
	var first, last time.Duration = time.Hour, 0
	for range n {
		select {
		case c := <-ends:
			if c.code != websocket.CloseServiceRestart {
				t.Errorf("close code %d, want 1012", c.code)
			}
			first, last = min(first, c.at), max(last, c.at)
		case <-time.After(5 * time.Second):
			t.Fatal("a session was not closed")
		}
	}
	if first > window/4 {
		t.Errorf("the first session closed %v after the drain began, want at its start", first)
	}
	if last < window/2 || last > window+time.Second {
		t.Errorf("the last session closed %v after the drain began, want within the window's second half (%v)", last, window)
	}
	if got := <-drained; got != n {
		t.Errorf("Drain reported %d sessions, want %d", got, n)
	}
}

// TestReconfigureReleasesOld: a session that stays quiet does not keep a
// replaced configuration alive: after two Reconfigures, the policy of the
// first one, which nothing else holds, is collected while the session
// (subscribed, authenticated, not sending) goes on. It failed when the
// session remembered the configuration it had taken its limits from and
// fitted its subscriptions to by pointer: the replaced one stayed
// reachable until the client's next message.
func TestReconfigureReleasesOld(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	c := dialAuthenticated(t, e, tokDemo, false)
	subscribe(t, c, "Market", "Security!BHP.ASX", 41)

	collected := make(chan struct{})
	func() {
		p := noNews(t)
		runtime.AddCleanup(p, func(ch chan struct{}) { close(ch) }, collected)
		if _, err := e.gw.Reconfigure(reconfigured(e, func(c *Config) { c.Policy = p })); err != nil {
			t.Fatal(err)
		}
	}()
	// A message after the first Reconfigure: the client reader takes the
	// configuration in force, as any quiet session's last message did.
	subscribe(t, c, "Market", "Security!RIO.ASX", 42)
	if _, err := e.gw.Reconfigure(reconfigured(e, func(*Config) {})); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		select {
		case <-collected:
			subscribe(t, c, "Market", "Security!CSL.ASX", 43) // the session goes on
			return
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the replaced configuration's policy is still reachable with the session quiet")
		}
	}
}
