package integration

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestMultiInstanceLiveRevocation: WebSocket sessions on B, each on a
// token issued by A, end when what they stand on is revoked on A: an
// access token or a refresh family at A's revocation endpoint, a user
// with `gatehouse user disable` run on A's config (another process). With
// revocation notices each ends within notifiedBound: the Identify push
// with Result Reject, then Market messages refused (Authority). The
// revocations are revocationSpacing apart, so that polling alone could
// not meet the bound. A session of the same user whose token is not
// revoked goes on.
func TestMultiInstanceLiveRevocation(t *testing.T) {
	t.Parallel()
	liveRevocationAcross(t, true, notifiedBound)
}

// TestMultiInstanceLiveRevocationPolling is the same with revocation
// notices off on both instances (revocation_notify off: CockroachDB has
// no LISTEN/NOTIFY): B's verifier finds each revocation at its next poll
// (5s), and the session ends within polledBound.
func TestMultiInstanceLiveRevocationPolling(t *testing.T) {
	t.Parallel()
	liveRevocationAcross(t, false, polledBound)
}

// liveRevocationAcross runs the live revocation test on a pair with
// notices on or off; every revocation must reach its session within
// bound.
func liveRevocationAcross(t *testing.T, notify bool, bound time.Duration) {
	a, b := startPair(t, multiConfig(t, "multi-live", notify), freshDatabase(t))
	const bhp = "Security!BHP.ASX"
	revokeAccess := func(tok tokenResponse) {
		resp, body := a.Revoke(t, tok.AccessToken)
		wantStatus(t, "revoking the access token on A", resp, body, http.StatusOK)
	}
	revokeFamily := func(tok tokenResponse) {
		resp, body := a.Revoke(t, tok.RefreshToken)
		wantStatus(t, "revoking the refresh token on A", resp, body, http.StatusOK)
	}
	cases := []struct {
		name, user string
		revoke     func(tok tokenResponse)
		tok        tokenResponse
		c          *liveConn
	}{
		{name: "access token revoked on A", user: "demo", revoke: revokeAccess},
		{name: "refresh family revoked on A", user: "demo", revoke: revokeFamily},
		{name: "user disabled on A's config", user: "trader", revoke: func(tokenResponse) { runCLI(t, a, "user", "disable", "trader") }},
		{name: "another access token revoked on A", user: "demo", revoke: revokeAccess},
		{name: "another refresh family revoked on A", user: "demo", revoke: revokeFamily},
	}
	for i := range cases {
		tc := &cases[i]
		tc.tok = a.PasswordGrant(t, tc.user, tc.user) // DEMO-ONLY: the password is the name
		tc.c = liveSession(t, b, tc.name, tc.tok.AccessToken)
		if m := tc.c.request(`{"Controller":"Auth","Topic":"Identify","Action":"Sub","TransactionID":2}`, "2"); !m.Confirm {
			t.Fatalf("%s: Identify Sub: %s", tc.name, m)
		}
		subscribeSecurity(t, tc.c, bhp, "3")
	}
	control := liveSession(t, b, "not revoked", a.PasswordGrant(t, "demo", "demo").AccessToken)
	subscribeSecurity(t, control, bhp, "3")

	var latencies []time.Duration
	for i, tc := range cases {
		if i > 0 {
			time.Sleep(revocationSpacing)
		}
		began := time.Now()
		tc.revoke(tc.tok)
		push := tc.c.next("an Identify push after the revocation", liveTimeout, (*liveMsg).identifyPush)
		if d := identify(t, push); d.Result != "Reject" || d.UserID != "" {
			t.Fatalf("%s: the Identify push: %s, want Result Reject alone", tc.name, push)
		}
		lapsed(t, tc.c, 5)
		// From the start of the revocation (the request to A's endpoint,
		// the CLI's start: an upper bound) to the push on B.
		latency := push.at.Sub(began)
		latencies = append(latencies, latency)
		t.Logf("%s: B's session ended %v after the revocation on A", tc.name, latency.Round(time.Millisecond))
		if latency > bound {
			t.Errorf("%s: B's session ended %v after the revocation on A, want within %v (notices %v)", tc.name, latency, bound, notify)
		}
	}
	if m := control.request(msg("Market", "QueryMarkets", "Publish", "4"), "4"); m.Action == "Error" {
		t.Fatalf("the session not revoked: QueryMarkets: %s", m)
	}
	if i := index(control.since(0), (*liveMsg).identifyPush); i >= 0 {
		t.Fatalf("the session not revoked got an Identify push: %s", control.since(0)[i])
	}
	slices.Sort(latencies)
	t.Logf("revocation on A to the session's end on B (notices %v): fastest %v, median %v, slowest %v", notify,
		latencies[0].Round(time.Millisecond), latencies[len(latencies)/2].Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond))
	if v := metricValue(scrapeMetrics(t, b), `gatehouse_ws_lapses_total{reason="revoked"}`); v != float64(len(cases)) {
		t.Errorf(`B's gatehouse_ws_lapses_total{reason="revoked"} = %v, want %d`, v, len(cases))
	}
}
