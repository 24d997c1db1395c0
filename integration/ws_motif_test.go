package integration

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// A replay of the original web client (motif-core) against the demo's
// /Zenith, written from docs/protocol.md ("The real client",
// "Transport", "Auth controller"): what that client sends, and what it
// checks of each answer before it goes on.

// The original client gives up on a socket that does not open, and on an
// AuthToken that gets no answer, after a timeout of its own (motif-core's
// connection engine allows 40 s for each); the replay holds the gateway to
// a few seconds, what a user waits.
const (
	motifOpenTimeout = 5 * time.Second
	motifAuthTimeout = 5 * time.Second
)

// motifExpiresIn is ExpiresIn as the original client reads it: a .NET
// TimeSpan with seven fractional digits, [d.]hh:mm:ss.fffffff.
var motifExpiresIn = regexp.MustCompile(`^(?:(\d+)\.)?(\d{2}):(\d{2}):(\d{2})\.(\d{7})$`)

// parseExpiresIn reads ExpiresIn, or fails.
func parseExpiresIn(t *testing.T, s string) time.Duration {
	t.Helper()
	p := motifExpiresIn.FindStringSubmatch(s)
	if p == nil {
		t.Fatalf("ExpiresIn %q is not [d.]hh:mm:ss.fffffff", s)
	}
	n := func(s string) time.Duration {
		v, _ := strconv.Atoi(s) // digits, as matched; "" is 0 days
		return time.Duration(v)
	}
	return n(p[1])*24*time.Hour + n(p[2])*time.Hour + n(p[3])*time.Minute + n(p[4])*time.Second + n(p[5])*100
}

// motifAuthToken sends the original client's AuthToken with tid and
// token, and checks its answer as that client does: within
// motifAuthTimeout, Controller Auth, Topic AuthToken (not Identify), not
// an Error, the very TransactionID text it sent. It returns the answer's
// Data and when it came.
func motifAuthToken(t *testing.T, c *liveConn, tid, token string) (identifyData, time.Time) {
	t.Helper()
	sent := time.Now()
	c.send(authTokenMsg(tid, token))
	m := c.next("the answer to AuthToken "+tid, motifAuthTimeout, func(m *liveMsg) bool { return m.Topic == "AuthToken" || m.tid() != "" })
	if m.Controller != "Auth" || m.Topic != "AuthToken" || m.Action != "Publish" || m.tid() != tid {
		t.Fatalf("the answer to AuthToken %s: %s, want Auth/AuthToken Publish with TransactionID %s", tid, m, tid)
	}
	t.Logf("AuthToken %s answered in %v", tid, m.at.Sub(sent))
	return identify(t, m), m.at
}

// checkMotifSuccess checks a successful AuthToken answer as the original
// client reads it: Result Success, AccessToken present and Base-64 of the
// token (it saves it to restore the session), ExpiryDate the token's exp,
// and ExpiresIn, from which it schedules its refresh, the time left until
// then when the answer was written.
func checkMotifSuccess(t *testing.T, d identifyData, token string, received time.Time) {
	t.Helper()
	exp := tokenExpiry(t, token)
	if d.Result != "Success" || d.AccessToken != b64(token) || d.ExpiryDate != zenithDateTime(exp) {
		t.Fatalf("AuthToken answer: Result %q, AccessToken the token's Base-64 %v, ExpiryDate %q (want %q)",
			d.Result, d.AccessToken == b64(token), d.ExpiryDate, zenithDateTime(exp))
	}
	left := parseExpiresIn(t, d.ExpiresIn)
	// Written at most when it was received, at least a moment before.
	if end := received.Add(left); end.Before(exp.Add(-time.Millisecond)) || end.After(exp.Add(motifAuthTimeout)) {
		t.Fatalf("ExpiresIn %s received at %s ends at %s, the token expires at %s", d.ExpiresIn,
			received.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano), exp.Format(time.RFC3339))
	}
	if left > time.Hour {
		t.Fatalf("ExpiresIn %s exceeds the demo's token lifetime", d.ExpiresIn)
	}
}

// TestMotifClientReplay replays the original web client against the
// demo's ws://localhost:<port>/Zenith?version=2.0: the socket opens with
// ZenithJson in time; a bad token is answered AuthToken/Rejected and the
// socket stays; the real token is answered AuthToken/Success within the
// client's auth timeout with its own token back and ExpiresIn; the Subs it
// starts with (Zenith/Feeds, Market/Markets) are confirmed (Action Sub,
// Confirm true) with their TransactionIDs; after an OAuth refresh it sends
// AuthToken again and the session goes on. Every TransactionID is a large
// integer the answers must echo as the same JSON text.
func TestMotifClientReplay(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	tok := g.PasswordGrant(t, "demo", "demo")
	g.AddSecret(b64(tok.AccessToken))
	const base = 4503599627370496 // 2^52: exact in the client's JavaScript numbers
	tid := func(i int) string { return strconv.FormatInt(base+int64(i), 10) }

	d := websocket.Dialer{HandshakeTimeout: motifOpenTimeout, Subprotocols: []string{"ZenithJson"}}
	began := time.Now()
	conn, resp, err := d.Dial(fmt.Sprintf("ws://localhost:%d/Zenith?version=2.0", g.Port), nil)
	if err != nil {
		t.Fatalf("open: %v (%v)", err, resp)
	}
	if took := time.Since(began); took > motifOpenTimeout {
		t.Fatalf("the socket opened in %v, over the client's open timeout", took)
	}
	if conn.Subprotocol() != "ZenithJson" {
		t.Fatalf("sub-protocol %q, want ZenithJson", conn.Subprotocol())
	}
	c := watch(t, "motif", conn)

	if d, _ := motifAuthToken(t, c, tid(0), b64("not a token")); d.Result != "Rejected" || d.AccessToken != "" || d.UserID != "" {
		t.Fatalf("a bad token: %+v, want Result Rejected alone", d)
	}
	d0, at := motifAuthToken(t, c, tid(1), tok.AccessToken)
	checkMotifSuccess(t, d0, tok.AccessToken, at)
	if d0.UserID != subjectOf(t, "demo") || d0.DisplayName != "Demo User" || !d0.hasScope("Market") {
		t.Fatalf("the AuthToken answer's identity: %+v", d0)
	}

	for i, topic := range []struct{ controller, topic string }{{"Zenith", "Feeds"}, {"Market", "Markets"}} {
		id := tid(2 + i)
		c.send(msg(topic.controller, topic.topic, "Sub", id))
		taken := c.until("the data of "+topic.topic, wsTimeout, func(m *liveMsg) bool { return m.update(topic.topic) })
		confirm := index(taken, func(m *liveMsg) bool { return m.tid() == id })
		if confirm < 0 || taken[confirm].Action != "Sub" || !taken[confirm].Confirm || taken[confirm].Topic != topic.topic {
			t.Fatalf("Sub %s/%s: %q, want Action Sub, Confirm true, TransactionID %s, then its data", topic.controller, topic.topic, taken, id)
		}
	}

	// After an OAuth refresh the client sends AuthToken again, Base-64 this
	// time; the session goes on.
	fresh := g.Refresh(t, tok.RefreshToken)
	g.AddSecret(b64(fresh.AccessToken))
	mark := c.mark()
	d1, at := motifAuthToken(t, c, tid(4), b64(fresh.AccessToken))
	checkMotifSuccess(t, d1, fresh.AccessToken, at)
	c.send(msg("Market", "QueryMarkets", "Publish", tid(5)))
	taken := c.until("the answer to QueryMarkets", wsTimeout, func(m *liveMsg) bool { return m.tid() == tid(5) })
	if m := taken[len(taken)-1]; m.Action == "Error" || m.Topic != "QueryMarkets" {
		t.Fatalf("QueryMarkets after the resend: %s", m)
	}
	if i := index(c.since(mark), func(m *liveMsg) bool { return m.Action == "Unsub" || m.Action == "Error" }); i >= 0 {
		t.Fatalf("a subscription ended by the resend: %s", c.since(mark)[i])
	}
	q := c.request(`{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":`+tid(6)+`}`, tid(6))
	if d := identify(t, q); q.Topic != "QueryIdentify" || d.Result != "Success" || d.ExpiryDate != d1.ExpiryDate || d.AccessToken != b64(fresh.AccessToken) {
		t.Fatalf("QueryIdentify after the resend: %s", q)
	}

	metrics := scrapeMetrics(t, g)
	for series, want := range map[string]float64{
		"gatehouse_ws_reauthentications_total":                          1,
		`gatehouse_ws_auth_total{method="auth_token",result="success"}`: 2,
		`gatehouse_ws_auth_total{method="auth_token",result="reject"}`:  1,
	} {
		if got := metricValue(metrics, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}
