package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Timing of the outage test.
const (
	// chains is how many refresh chains the load runs at once, half of
	// them started on each instance.
	chains = 24
	// maxOutages bounds the outages the test makes until one swallowed
	// a committed rotation.
	maxOutages = 3
	// swallowTime is how long the proxy swallows the server's answers
	// before it cuts every connection: each chain has one statement in
	// flight, which the server runs (a rotation among them commits)
	// while its answer is lost.
	swallowTime = 500 * time.Millisecond
	// outageTime is how long PostgreSQL stays away: twice the refresh
	// tokens' grace window (5s), so that a retry after it could not pass
	// for a retry inside the window.
	outageTime = 10 * time.Second
	// retryPause is the pause of a chain before it sends the same
	// refresh token again after a 503 or a broken connection.
	retryPause = 100 * time.Millisecond
	// recoverTimeout bounds the wait for every chain to refresh again
	// after PostgreSQL is back (the pools and the listeners connect
	// again; the listener waits up to 5s between attempts).
	recoverTimeout = 30 * time.Second
)

// chain is one client's refresh chain: each answer's refresh token is the
// next request's, sent to either instance at random; a 503 or a broken
// connection is answered by sending the same token again after
// retryPause.
type chain struct {
	family      string
	token       string // the latest refresh token
	generation  int    // the latest token's generation
	refreshes   int    // successful refreshes
	unavailable int    // 503 temporarily_unavailable answers
	broken      int    // requests without an answer
	failure     error  // why the chain stopped, if it did
}

// generationOf is the generation a refresh token names
// ("<family>~<generation>~<secret>~<tag>", docs/operations.md: "Sessions, revocation
// and what ends them").
func generationOf(token string) (family string, generation int, err error) {
	parts := strings.Split(token, "~")
	if len(parts) != 4 {
		return "", 0, fmt.Errorf("a refresh token of %d parts", len(parts))
	}
	generation, err = strconv.Atoi(parts[1])
	return parts[0], generation, err
}

// run refreshes until stop closes or the chain fails.
func (c *chain) run(ctx context.Context, instances []*Gatehouse, endpoints []string, mu *sync.Mutex, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		i := rand.IntN(len(instances))
		r := postRefresh(ctx, instances[i], endpoints[i], c.token)
		mu.Lock()
		switch {
		case r.fault != nil:
			c.broken++
		case r.status == http.StatusServiceUnavailable && r.err.Error == "temporarily_unavailable":
			c.unavailable++
		case r.status == http.StatusOK:
			fam, gen, err := generationOf(r.tok.RefreshToken)
			switch {
			case err != nil:
				c.failure = err
			case fam != c.family || gen != c.generation+1:
				// A rotation the client never saw: a refresh token
				// issued twice for one request.
				c.failure = fmt.Errorf("after generation %d of family %s, a token of generation %d of %s", c.generation, c.family, gen, fam)
			default:
				c.token, c.generation = r.tok.RefreshToken, gen
				c.refreshes++
			}
		default:
			c.failure = fmt.Errorf("instance %d answered %d %s: %s", i, r.status, r.err.Error, r.err.ErrorDescription)
		}
		failed, retry := c.failure != nil, r.status != http.StatusOK
		mu.Unlock()
		if failed {
			return
		}
		if retry {
			time.Sleep(retryPause)
		}
	}
}

// load is the chains running.
type load struct {
	mu     sync.Mutex // guards every chain's fields
	chains []*chain
	stop   chan struct{}
	wg     sync.WaitGroup
}

// startLoad logs demo in chains times, half on each instance, and runs a
// chain on each login until the test ends or stopAll.
func startLoad(t *testing.T, a, b *Gatehouse) *load {
	t.Helper()
	instances := []*Gatehouse{a, b}
	endpoints := []string{a.TokenEndpoint(t), b.TokenEndpoint(t)}
	l := &load{stop: make(chan struct{})}
	for i := range chains {
		tok := instances[i%2].PasswordGrant(t, "demo", "demo")
		fam, gen, err := generationOf(tok.RefreshToken)
		if err != nil {
			t.Fatal(err)
		}
		l.chains = append(l.chains, &chain{family: fam, token: tok.RefreshToken, generation: gen})
	}
	ctx, cancel := context.WithCancel(context.Background())
	for _, c := range l.chains {
		l.wg.Go(func() { c.run(ctx, instances, endpoints, &l.mu, l.stop) })
	}
	t.Cleanup(func() { cancel(); l.stopAll() })
	return l
}

// stopAll stops every chain and waits for them.
func (l *load) stopAll() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// progress waits until every chain has refreshed n more times than it had
// at the call, failing t after timeout or when a chain fails.
func (l *load) progress(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	l.mu.Lock()
	from := make([]int, len(l.chains))
	for i, c := range l.chains {
		from[i] = c.refreshes
	}
	l.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for {
		l.mu.Lock()
		behind := 0
		for i, c := range l.chains {
			if c.failure != nil {
				l.mu.Unlock()
				t.Fatalf("chain %d (family %s): %v", i, c.family, c.failure)
			}
			if c.refreshes < from[i]+n {
				behind++
			}
		}
		l.mu.Unlock()
		if behind == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d chains did not refresh %d times within %v", behind, len(l.chains), n, timeout)
		}
		time.Sleep(pollInterval)
	}
}

// totals sums the chains' counters.
func (l *load) totals() (refreshes, unavailable, broken int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.chains {
		refreshes, unavailable, broken = refreshes+c.refreshes, unavailable+c.unavailable, broken+c.broken
	}
	return refreshes, unavailable, broken
}

// TestMultiInstanceOutage stops PostgreSQL under two instances while a
// load of refresh chains runs (each chain sends the same refresh token
// again after a 503 or a broken connection), with live sockets on both.
// The proxy in front of the database first swallows the answers of the
// statements in flight (rotations commit and their answers are lost),
// then cuts every connection, and PostgreSQL (a cluster of this test's
// own) is stopped for outageTime, twice the grace window. Meanwhile the
// token endpoint answers 503 temporarily_unavailable, client_credentials
// (no store) goes on, and the sockets authenticated before keep working:
// verification needs no database. When PostgreSQL is back, on another
// port, everything recovers without a restart: every chain refreshes
// again, the retries whose first answer was lost getting the successor
// that was committed (the grace window does not run during an outage);
// no chain saw a generation skipped, no family was revoked, and each
// family's stored generation is its chain's last; a revocation on A ends
// a socket on B at once again (the listeners reconnected).
func TestMultiInstanceOutage(t *testing.T) {
	t.Parallel()
	pg := startCluster(t)
	proxy := newFaultProxy(t, pg.HostPort())
	dsn := "postgres://postgres@" + proxy.addr() + "/postgres?sslmode=disable"
	a, b := startPair(t, multiConfig(t, "multi-outage", true), dsn)
	const bhp = "Security!BHP.ASX"
	sessions := []*liveConn{
		liveSession(t, a, "on A", a.PasswordGrant(t, "demo", "demo").AccessToken),
		liveSession(t, b, "on B", b.PasswordGrant(t, "demo", "demo").AccessToken),
	}
	for _, s := range sessions {
		subscribeSecurity(t, s, bhp, "2")
	}
	revokeLater := a.PasswordGrant(t, "demo", "demo")
	revokedLater := liveSession(t, b, "to revoke after the outage", revokeLater.AccessToken)
	if m := revokedLater.request(`{"Controller":"Auth","Topic":"Identify","Action":"Sub","TransactionID":2}`, "2"); !m.Confirm {
		t.Fatalf("Identify Sub: %s", m)
	}

	l := startLoad(t, a, b)
	l.progress(t, 3, recoverTimeout)
	graces := 0
	for attempt := 1; ; attempt++ {
		outage(t, pg, proxy, l, a, b, sessions)
		graces = 0
		for _, g := range []*Gatehouse{a, b} {
			graces += countEntries(logEntries(t, g, "token issued"), map[string]any{"grant_type": "refresh_token", "grace": true})
		}
		if graces > 0 || attempt == maxOutages {
			break
		}
		// Each chain has one statement in flight when the answers are
		// swallowed: a rotation for some, a read for the others.
		t.Logf("outage %d swallowed no committed rotation; another one", attempt)
	}
	l.stopAll()
	t.Logf("%d refreshes answered from the grace window: retries of rotations whose answer an outage swallowed", graces)
	if graces == 0 {
		t.Errorf("after %d outages, no retry was answered from the grace window: no committed rotation was swallowed, "+
			"and the test shows nothing of a retry after an outage", maxOutages)
	}

	// Every chain intact: its family not revoked, at the generation the
	// chain last saw (no rotation it did not see), and its token good.
	conn, err := pgx.Connect(t.Context(), pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for i, c := range l.chains {
		var generation int
		var revoked bool
		if err := conn.QueryRow(t.Context(), `SELECT generation, revoked_at IS NOT NULL FROM refresh_families WHERE id = $1`,
			c.family).Scan(&generation, &revoked); err != nil {
			t.Fatalf("chain %d: reading its family: %v", i, err)
		}
		if revoked || generation != c.generation {
			t.Errorf("chain %d: its family is at generation %d, revoked %v; the chain saw generation %d", i, generation, revoked, c.generation)
		}
		resp, body := []*Gatehouse{a, b}[i%2].RefreshGrant(t, c.token)
		wantStatus(t, fmt.Sprintf("chain %d: its last token", i), resp, body, http.StatusOK)
	}
	for _, g := range []*Gatehouse{a, b} {
		if n := len(logEntries(t, g, "refresh token replay detected")); n != 0 {
			t.Errorf("%s: %d replays detected", g.URL, n)
		}
	}

	// The rest recovers: logins, the sockets, the revocation list, and a
	// revocation on A reaching B's socket through the listeners.
	for _, g := range []*Gatehouse{a, b} {
		g.PasswordGrant(t, "demo", "demo")
		within(t, g.URL+": the revocation list read again", liveTimeout, func() bool {
			return metricValue(scrapeMetrics(t, g), "gatehouse_revocations_stale") == 0
		})
	}
	for _, s := range sessions {
		if m := s.request(msg("Market", "QueryMarkets", "Publish", "99"), "99"); m.Action == "Error" {
			t.Fatalf("%s: QueryMarkets after the outage: %s", s.name, m)
		}
		if i := index(s.since(0), (*liveMsg).identifyPush); i >= 0 {
			t.Fatalf("%s: an Identify push: %s", s.name, s.since(0)[i])
		}
	}
	revoked := time.Now()
	resp, body := a.Revoke(t, revokeLater.AccessToken)
	wantStatus(t, "revoking on A after the outage", resp, body, http.StatusOK)
	push := revokedLater.next("an Identify push after the revocation", liveTimeout, (*liveMsg).identifyPush)
	if d := push.at.Sub(revoked); d > notifiedBound {
		t.Errorf("after the outage, a revocation on A ended B's socket after %v, want within %v", d, notifiedBound)
	}
}

// outage swallows the answers of the statements in flight, cuts every
// connection and stops PostgreSQL for outageTime, checking what must
// hold meanwhile (503 temporarily_unavailable, client_credentials, the
// sockets), then starts it again and waits for every chain to refresh
// again.
func outage(t *testing.T, pg *cluster, proxy *faultProxy, l *load, a, b *Gatehouse, sessions []*liveConn) {
	t.Helper()
	_, unavailableBefore, brokenBefore := l.totals()
	proxy.swallowAnswers()
	time.Sleep(swallowTime)
	proxy.cutAll()
	began := time.Now()
	pg.Stop()
	notices := metricValue(scrapeMetrics(t, b), "gatehouse_revocation_notices_total")
	for _, g := range []*Gatehouse{a, b} {
		resp, body := g.PostToken(t, url.Values{"grant_type": {"password"}, "username": {"demo"}, "password": {"demo"},
			"client_id": {publicClient}}, "", "")
		if resp.StatusCode != http.StatusServiceUnavailable || decodeError(t, resp, body).Error != "temporarily_unavailable" {
			t.Errorf("%s: a password grant during the outage: %s %s, want 503 temporarily_unavailable", g.URL, resp.Status, body)
		}
		resp, body = g.PostToken(t, url.Values{"grant_type": {"client_credentials"}}, serviceClient, serviceSecret)
		wantStatus(t, g.URL+": client_credentials during the outage", resp, body, http.StatusOK)
	}
	for tid := 1000; time.Since(began) < outageTime; tid++ {
		for _, s := range sessions {
			id := strconv.Itoa(tid)
			if m := s.request(msg("Market", "QueryMarkets", "Publish", id), id); m.Action == "Error" {
				t.Fatalf("%s: QueryMarkets during the outage: %s", s.name, m)
			}
		}
		time.Sleep(time.Second)
	}
	for _, g := range []*Gatehouse{a, b} {
		if v := metricValue(scrapeMetrics(t, g), "gatehouse_revocations_stale"); v != 1 {
			t.Errorf("%s: gatehouse_revocations_stale = %v during the outage, want 1", g.URL, v)
		}
	}
	_, unavailable, broken := l.totals()
	if unavailable == unavailableBefore {
		t.Error("the chains got no 503 during the outage")
	}
	pg.Start()
	proxy.restore(pg.HostPort())
	back := time.Now()
	l.progress(t, 3, recoverTimeout)
	// B's listener connects again, and its first notice has the verifier
	// read what it may have missed.
	within(t, "B's listener connected again", liveTimeout, func() bool {
		return metricValue(scrapeMetrics(t, b), "gatehouse_revocation_notices_total") > notices
	})
	t.Logf("outage of %v: the chains got %d answers 503 and %d broken connections; all refreshed again %v after PostgreSQL was back",
		back.Sub(began).Round(time.Millisecond), unavailable-unavailableBefore, broken-brokenBefore, time.Since(back).Round(time.Millisecond))
}
