package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The end of a live session's authority, through the real binary: expiry
// (then a fresh token resumes the feed, or the grace period closes the
// socket) and revocation (of the access token, of its refresh family, of
// the user with the CLI).

// trades is the NumberOfTrades of a Market/Security snapshot or update.
func trades(t *testing.T, m *liveMsg) int64 {
	t.Helper()
	var d struct {
		NumberOfTrades int64 `json:"NumberOfTrades"`
	}
	if err := json.Unmarshal(m.Data, &d); err != nil {
		t.Fatalf("not Security data: %s: %v", m, err)
	}
	return d.NumberOfTrades
}

// snapshot reports whether m is the snapshot of topic (an update has no
// Code).
func snapshot(m *liveMsg, topic string) bool {
	return m.update(topic) && strings.Contains(string(m.Data), `"Code":`)
}

// feedsStop checks that the updates of topic stop on each of conns: after
// settleTime for those in flight, none comes for silentTime. The demo
// backend sends one per tick for as long as it holds the subscription,
// and the gateway relays every backend message whatever the session's
// authority, so the silence is the backend's: it got the gateway's Unsub.
func feedsStop(t *testing.T, topic string, conns ...*liveConn) {
	t.Helper()
	time.Sleep(settleTime)
	for _, l := range conns {
		l.pending()
	}
	time.Sleep(silentTime)
	for _, l := range conns {
		for _, m := range l.pending() {
			if m.update(topic) {
				t.Fatalf("%s: an update of %s after the lapse, the feed should have stopped: %s", l.name, topic, m)
			}
		}
	}
}

// lapsed checks that l's authority has ended: a Market message gets Error
// Authority and QueryIdentify Reject. tid is the first of the two
// TransactionIDs used.
func lapsed(t *testing.T, l *liveConn, tid int) {
	t.Helper()
	a, b := strconv.Itoa(tid), strconv.Itoa(tid+1)
	if m := l.request(msg("Market", "Security!CBA.ASX", "Sub", a), a); !m.isError(a, "Authority") {
		t.Fatalf("%s: a Market Sub after the lapse: %s, want Error Authority", l.name, m)
	}
	if m := l.request(`{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":`+b+`}`, b); identify(t, m).Result != "Reject" {
		t.Fatalf("%s: QueryIdentify after the lapse: %s, want Reject", l.name, m)
	}
}

// expiryLapseBound bounds how long after its expiry a session keeps its
// authority: the supervisor lapses an expired identity at its next walk
// (every second), without waiting for the verifier, which would refuse
// the token only after its leeway (10s) at the next recheck (3s).
const expiryLapseBound = 5 * time.Second

// TestLiveExpiry runs the demo with 4-second access tokens (the
// gatehouse option access_token_lifetime accepts any positive duration;
// exp has whole seconds) and expiry_grace 8s on /ws. Two sessions of one
// token subscribe to BHP. At the token's expiry the first one's Market
// messages are refused and its feed stops (the backend got the gateway's
// Unsub); a refreshed token resumes it, the backend confirming the Sub
// again and sending a fresh snapshot. The second one, left lapsed, is
// closed with 1008 (never a 4xxx code) once the grace period has passed.
func TestLiveExpiry(t *testing.T) {
	t.Parallel()
	const grace = 8 * time.Second
	g := StartGatehouseWith(t, Options{Config: liveConfig(t, "ws-expiry",
		[]string{"access_token_lifetime 4s"}, "expiry_grace "+grace.String())})
	const bhp = "Security!BHP.ASX"
	demoID := subjectOf(t, "demo")
	tok := g.PasswordGrant(t, "demo", "demo")
	exp := tokenExpiry(t, tok.AccessToken)

	a := liveSession(t, g, "resumed", tok.AccessToken)
	subscribeSecurity(t, a, bhp, "2")
	bc, resp, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tok.AccessToken)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	b := watch(t, "left lapsed", bc)
	subscribeSecurity(t, b, bhp, "2")

	// Poll with a Market message until the gateway refuses it.
	var lastAnswered time.Time
	var lastTrades int64
	for i := 100; ; i++ {
		tid := strconv.Itoa(i)
		sent := time.Now()
		a.send(msg("Market", "QueryMarkets", "Publish", tid))
		taken := a.until("the answer to QueryMarkets", wsTimeout, func(m *liveMsg) bool { return m.tid() == tid })
		for _, m := range taken {
			if m.update(bhp) {
				lastTrades = trades(t, m)
			}
		}
		if m := taken[len(taken)-1]; m.isError(tid, "Authority") {
			break
		} else if m.Action == "Error" {
			t.Fatalf("QueryMarkets before expiry: %s", m)
		}
		lastAnswered = sent
		if late := time.Since(exp); late > expiryLapseBound {
			t.Fatalf("QueryMarkets still answered %v after the token's expiry, want a lapse within %v", late, expiryLapseBound)
		}
		time.Sleep(pollEvery)
	}
	// Authority held until about the expiry (the supervisor walks every
	// second; polls are pollEvery apart).
	if early := exp.Sub(lastAnswered); early > time.Second+pollEvery {
		t.Fatalf("the last Market message answered was sent %v before the expiry", early)
	}
	lapsed(t, a, 200)
	feedsStop(t, bhp, a)

	// A refreshed token resumes the session: the reply, then the backend's
	// answers to the Sub the gateway sent again (its confirmation with the
	// client's TransactionID, a snapshot newer than the last update).
	fresh := g.Refresh(t, tok.RefreshToken)
	a.send(authTokenMsg("300", fresh.AccessToken))
	taken := a.until("a snapshot after the fresh AuthToken", wsTimeout, func(m *liveMsg) bool { return snapshot(m, bhp) })
	reply := index(taken, func(m *liveMsg) bool { return m.tid() == "300" })
	confirm := index(taken, func(m *liveMsg) bool { return m.tid() == "2" && m.Action == "Sub" && m.Confirm })
	if reply < 0 || confirm < reply {
		t.Fatalf("after the fresh AuthToken: %q, want the reply, the Sub's confirmation, then the snapshot", taken)
	}
	if d := identify(t, taken[reply]); d.Result != "Success" || d.ExpiryDate != zenithDateTime(tokenExpiry(t, fresh.AccessToken)) {
		t.Fatalf("the fresh AuthToken: %s", taken[reply])
	}
	if n := trades(t, taken[len(taken)-1]); n <= lastTrades+1 {
		t.Fatalf("the snapshot after resuming has %d trades, the last update before the lapse %d: want a fresh one", n, lastTrades)
	}
	if m := a.request(msg("Market", "QueryMarkets", "Publish", "301"), "301"); m.Action == "Error" {
		t.Fatalf("QueryMarkets after resuming: %s", m)
	}
	a.next("an update after resuming", wsTimeout, func(m *liveMsg) bool { return m.update(bhp) && !snapshot(m, bhp) })
	if n := a.reservedSeen(); n != 0 {
		t.Fatalf("%d messages with a reserved TransactionID reached the client", n)
	}

	// The other session: closed once the grace period has passed.
	code, at := b.closed(grace + liveTimeout)
	if code != websocket.ClosePolicyViolation {
		t.Fatalf("a session lapsed past expiry_grace: close %d, want 1008", code)
	}
	if at.Before(exp.Add(grace - 100*time.Millisecond)) {
		t.Fatalf("closed %v after the expiry, before expiry_grace %v", at.Sub(exp), grace)
	}
	t.Logf("lapsed session closed %v after the token's expiry", at.Sub(exp).Round(time.Millisecond))

	waitForMetric(t, g, `gatehouse_ws_lapses_total{reason="expired"}`, 2)
	if n := countEntries(logEntries(t, g, "ws authority lapsed"), map[string]any{"reason": "expired", "user": demoID}); n < 2 {
		t.Errorf("%d audit entries of an expiry, want at least 2", n)
	}
	if n := countEntries(logEntries(t, g, "ws reauthentication"), map[string]any{"user": demoID, "was_lapsed": true, "resubscribed": 1.0}); n != 1 {
		t.Errorf("%d audit entries of the resumption, want 1", n)
	}
	if n := countEntries(logEntries(t, g, "ws session closed"), map[string]any{"reason": "authority lapsed past the grace period", "user": demoID}); n < 1 {
		t.Error("no audit entry of the close after the grace period")
	}
}

// disableUser runs `gatehouse user disable <username>` on g's config and
// store, as an operator would, while g runs.
func disableUser(t *testing.T, g *Gatehouse, username string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "user", "disable", username, "--config", g.opts.Config)
	cmd.Dir = repoRoot
	cmd.Env = g.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gatehouse user disable %s: %v\n%s", username, err, out)
	}
	t.Logf("gatehouse user disable %s: %s", username, strings.TrimSpace(string(out)))
}

// TestLiveRevocation revokes what live sessions of the demo's /ws stand
// on, three ways at once on one gatehouse: one session's access token and
// another's refresh family at /connect/revocation (the identity server
// revokes an access token by its jti), and a third one's user with
// `gatehouse user disable` from another process (which the server reads
// within 5s). Each ends that session's authority within liveTimeout: an
// Identify push with Result Reject, Market messages refused, the feed
// stopped, the same token refused again. A fourth session of demo, whose
// token is not revoked, goes on. Counted and audited.
func TestLiveRevocation(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	const bhp = "Security!BHP.ASX"
	cases := []struct {
		name, user string
		revoke     func(tok tokenResponse)
		tok        tokenResponse
		c          *liveConn
	}{
		{name: "access token revoked", user: "demo", revoke: func(tok tokenResponse) {
			resp, body := g.Revoke(t, tok.AccessToken)
			wantStatus(t, "revoking the access token", resp, body, http.StatusOK)
		}},
		{name: "refresh family revoked", user: "demo", revoke: func(tok tokenResponse) {
			resp, body := g.Revoke(t, tok.RefreshToken)
			wantStatus(t, "revoking the refresh token", resp, body, http.StatusOK)
		}},
		{name: "user disabled", user: "trader", revoke: func(tokenResponse) { disableUser(t, g, "trader") }},
	}
	for i := range cases {
		tc := &cases[i]
		tc.tok = g.PasswordGrant(t, tc.user, tc.user) // DEMO-ONLY: the password is the name
		tc.c = liveSession(t, g, tc.name, tc.tok.AccessToken)
		if m := tc.c.request(`{"Controller":"Auth","Topic":"Identify","Action":"Sub","TransactionID":2}`, "2"); !m.Confirm {
			t.Fatalf("%s: Identify Sub: %s", tc.name, m)
		}
		subscribeSecurity(t, tc.c, bhp, "3")
	}
	control := liveSession(t, g, "not revoked", g.PasswordGrant(t, "demo", "demo").AccessToken)
	subscribeSecurity(t, control, bhp, "3")

	began := time.Now()
	for _, tc := range cases {
		tc.revoke(tc.tok)
	}
	var conns []*liveConn
	for _, tc := range cases {
		push := tc.c.next("an Identify push after the revocation", liveTimeout-time.Since(began), (*liveMsg).identifyPush)
		if d := identify(t, push); d.Result != "Reject" || d.UserID != "" {
			t.Fatalf("%s: the Identify push: %s, want Result Reject alone", tc.name, push)
		}
		t.Logf("%s: the session's authority ended %v after the revocations began", tc.name, push.at.Sub(began).Round(time.Millisecond))
		lapsed(t, tc.c, 5)
		if m := tc.c.request(authTokenMsg("7", tc.tok.AccessToken), "7"); identify(t, m).Result != "Reject" {
			t.Fatalf("%s: the revoked token again: %s, want Reject", tc.name, m)
		}
		conns = append(conns, tc.c)
	}
	feedsStop(t, bhp, conns...)

	// The other session of demo was rechecked meanwhile (every 3s) and
	// holds: no push, its messages answered, its feed going on.
	if m := control.request(msg("Market", "QueryMarkets", "Publish", "4"), "4"); m.Action == "Error" {
		t.Fatalf("the session not revoked: QueryMarkets: %s", m)
	}
	control.next("an update", wsTimeout, func(m *liveMsg) bool { return m.update(bhp) })
	if i := index(control.since(0), func(m *liveMsg) bool { return m.Controller == "Auth" && m.tid() == "" }); i >= 0 {
		t.Fatalf("the session not revoked got an Identify push: %s", control.since(0)[i])
	}

	if v := metricValue(scrapeMetrics(t, g), `gatehouse_ws_lapses_total{reason="revoked"}`); v != float64(len(cases)) {
		t.Errorf(`gatehouse_ws_lapses_total{reason="revoked"} = %v, want %d`, v, len(cases))
	}
	entries := logEntries(t, g, "ws authority lapsed")
	for user, want := range map[string]int{subjectOf(t, "demo"): 2, subjectOf(t, "trader"): 1} {
		if n := countEntries(entries, map[string]any{"reason": "revoked", "user": user}); n != want {
			t.Errorf("%d audit entries of a revocation of %s's session, want %d", n, user, want)
		}
	}
	for _, m := range []string{"access token revoked", "refresh token revoked"} {
		if len(logEntries(t, g, m)) != 1 {
			t.Errorf("no audit entry %q", m)
		}
	}
}
