package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"
)

// Attacks on several gatehouse instances sharing one PostgreSQL store:
// parallel bursts against two processes (A and B, startPair), and
// revocations made by one process (or the CLI) that must reach the
// other. The first two found bugs, now fixed: a changed password or a
// disabled user left the browser sessions, the codes and the logins in
// flight of the old authentication alive (their messages say what failed
// before); the TestAttack* ones held.

// rawResult is one answer of an endpoint, read from any goroutine.
type rawResult struct {
	status int
	body   map[string]any
	fault  error
	at     time.Time // when the answer came
}

// postRaw posts form to endpoint through g's client, never failing the
// test (for goroutines).
func postRaw(ctx context.Context, g *Gatehouse, endpoint string, form url.Values) rawResult {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return rawResult{fault: err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := g.Client.Do(req)
	if err != nil {
		return rawResult{fault: err, at: time.Now()}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	r := rawResult{status: resp.StatusCode, at: time.Now()}
	if err == nil {
		err = json.Unmarshal(raw, &r.body)
	}
	if err != nil {
		r.fault = fmt.Errorf("%d: %v: %s", resp.StatusCode, err, raw)
	}
	return r
}

func (r rawResult) str(name string) string { s, _ := r.body[name].(string); return s }

// burst posts form(i) for i in [0, n) at once, alternately to a and b (at
// endpoints[g]), and returns their answers in order.
func burst(t *testing.T, n int, a, b *Gatehouse, endpoints map[*Gatehouse]string, form func(i int) url.Values) []rawResult {
	results := make([]rawResult, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range results {
		g := a
		if i%2 == 1 {
			g = b
		}
		wg.Go(func() {
			<-start
			results[i] = postRaw(t.Context(), g, endpoints[g], form(i))
		})
	}
	close(start)
	wg.Wait()
	return results
}

// TestSessionEndsWithPasswordChange: an attacker who logged in with
// a stolen password in a browser on A keeps the login session cookie.
// The victim's password is changed with `gatehouse user passwd`, which
// promises to end the user's sessions ("a changed password must not leave
// a stolen session alive"). The attacker then asks B for a code with
// prompt=none: B must not answer from the old session. It failed when the
// revocation left sessions alone: B answered with a code, redeemed for
// fresh tokens (refresh token included). The same for disable followed by
// enable ("enabling again revives none of them"), and for a code issued
// before the change, redeemed after it.
func TestSessionEndsWithPasswordChange(t *testing.T) {
	t.Parallel()
	a, b := startPair(t, multiConfig(t, "attack-session", true), freshDatabase(t))
	redirect := "http://127.0.0.1:40000/callback"

	check := func(t *testing.T, what string, onB *browser) {
		p := onB.get(codeURL(b, oauth2.GenerateVerifier(), "prompt", "none"))
		if p.location == nil {
			return // a login page: the session ended
		}
		if got := p.params(t, false); got.Get("code") != "" || got.Get("error") != "login_required" {
			t.Errorf("%s: B answered prompt=none from the attacker's old login session with %v, want login_required: the session survived", what, got)
		}
	}

	t.Run("password changed", func(t *testing.T) {
		onA := newBrowser(t, a)
		code := onA.login(onA.get(codeURL(a, oauth2.GenerateVerifier())), "demo", "demo").params(t, false).Get("code")
		if code == "" || !onA.hasSession() {
			t.Fatal("login on A failed")
		}
		runCLIInput(t, a, "a-new-password-1", "user", "passwd", "demo")
		time.Sleep(notifiedBound) // let every instance apply the subject's revocation
		check(t, "after `gatehouse user passwd demo`", onA.on(b))
	})
	t.Run("code issued before the change redeemed after", func(t *testing.T) {
		// The attacker, logged in with the stolen password, holds back
		// one code; the password is changed; the code is redeemed on B.
		runCLIInput(t, a, "a-new-password-1b", "user", "passwd", "demo") // the password the attacker stole
		time.Sleep(notifiedBound)
		br := newBrowser(t, b)
		verifier := oauth2.GenerateVerifier()
		code := br.login(br.get(codeURL(b, verifier)), "demo", "a-new-password-1b").params(t, false).Get("code")
		if code == "" {
			t.Fatal("login failed")
		}
		runCLIInput(t, a, "a-new-password-3", "user", "passwd", "demo")
		time.Sleep(notifiedBound)
		status, tok := exchangeCode(t, b, publicClient, "", code, redirect, verifier)
		if status != http.StatusOK {
			if e, _ := tok["error"].(string); status != http.StatusBadRequest || e != "invalid_grant" {
				t.Fatalf("the code from before the change: %d %v, want 400 invalid_grant", status, tok)
			}
			return
		}
		rt, _ := tok["refresh_token"].(string)
		r := postRefresh(t.Context(), a, a.TokenEndpoint(t), rt)
		t.Errorf("a code issued before `gatehouse user passwd demo` was redeemed on B after it: "+
			"tokens issued, and the new refresh family refreshes on A (%d)", r.status)
	})
	t.Run("disabled then enabled", func(t *testing.T) {
		onA := newBrowser(t, a)
		code := onA.login(onA.get(codeURL(a, oauth2.GenerateVerifier())), "trader", "trader").params(t, false).Get("code")
		if code == "" || !onA.hasSession() {
			t.Fatal("login on A failed")
		}
		runCLI(t, a, "user", "disable", "trader")
		runCLI(t, a, "user", "enable", "trader")
		time.Sleep(notifiedBound)
		check(t, "after `gatehouse user disable trader` then `enable`", onA.on(b))
	})
}

// TestLoginInFlightEndsWithPasswordChange: an attacker holding a
// stolen password starts a password grant on B just before the password
// is changed on A's config (`gatehouse user passwd`, which revokes the
// subject's sessions). The attacker first fails a few logins from its
// own address, so that the throttle holds each of its later attempts
// about 3 s between reading the user's (old) hash and issuing tokens.
// The attempt in flight finishes after the change and the revocation: it
// is checked against the old hash, and its tokens are issued after the
// subject's not-before time, so neither the access token nor the new
// refresh family is revoked. With the bug, the attacker keeps a refresh
// family that refreshes on any instance after the password change.
func TestLoginInFlightEndsWithPasswordChange(t *testing.T) {
	t.Parallel()
	a, b := startPair(t, multiConfig(t, "attack-inflight", true), freshDatabase(t))
	tokenB := b.TokenEndpoint(t)

	// Throttle the attacker's own source: failures with names that are no
	// user (counted per source), in small parallel batches.
	for range 2 {
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() {
				postRaw(t.Context(), b, tokenB, url.Values{"grant_type": {"password"}, "client_id": {publicClient},
					"username": {fmt.Sprintf("nobody-%d", i)}, "password": {"x"}})
			})
		}
		wg.Wait()
	}

	began := time.Now()
	done := make(chan rawResult, 1)
	go func() {
		done <- postRaw(t.Context(), b, tokenB, url.Values{"grant_type": {"password"}, "client_id": {publicClient},
			"username": {"demo"}, "password": {"demo"}}) // DEMO-ONLY: the stolen (old) password
	}()
	time.Sleep(300 * time.Millisecond)
	runCLIInput(t, a, "a-new-password-2", "user", "passwd", "demo")
	changed := time.Now()
	r := <-done
	if r.fault != nil {
		t.Fatalf("the login in flight: %v", r.fault)
	}
	t.Logf("login began at 0, password changed at %v, login answered %d at %v",
		changed.Sub(began).Round(time.Millisecond), r.status, r.at.Sub(began).Round(time.Millisecond))
	if r.status != http.StatusOK {
		// Refused as a wrong password is: the answer does not tell that the
		// guess was right until moments ago.
		if r.status != http.StatusBadRequest || r.str("error") != "invalid_grant" || r.str("error_description") != "invalid username or password" {
			t.Fatalf("the login in flight: %d %v, want 400 invalid_grant, invalid username or password", r.status, r.body)
		}
		return
	}
	if !r.at.After(changed) {
		t.Fatalf("inconclusive: the login was answered before the password change finished")
	}
	time.Sleep(notifiedBound) // every instance applies the subject's revocation
	at, rt := r.str("access_token"), r.str("refresh_token")
	resp, _ := a.Userinfo(t, at)
	var failures []string
	if resp.StatusCode == http.StatusOK {
		failures = append(failures, "its access token is accepted by A's userinfo")
	}
	if introspectActive(t, a, at) {
		failures = append(failures, "its access token is active in A's introspection")
	}
	if rt != "" {
		res := postRefresh(t.Context(), a, a.TokenEndpoint(t), rt)
		if res.status == http.StatusOK {
			next := postRefresh(t.Context(), b, tokenB, res.tok.RefreshToken)
			failures = append(failures, fmt.Sprintf("its refresh token refreshes on A after the change (and the successor on B: %d)", next.status))
		}
	}
	if len(failures) > 0 {
		t.Errorf("a password grant with the OLD password, in flight while the password was changed, "+
			"gave tokens that survive the change: %s", strings.Join(failures, "; "))
	}
}

// TestAttackRefreshBurst: one refresh token sent 6 times to A and 6 times
// to B at once, for several families. Every success must carry the same
// successor (one family), and if any request is refused as a replay, no
// successor may refresh.
func TestAttackRefreshBurst(t *testing.T) {
	t.Parallel()
	a, b := startPair(t, multiConfig(t, "attack-refresh", true), freshDatabase(t))
	endpoints := map[*Gatehouse]string{a: a.TokenEndpoint(t), b: b.TokenEndpoint(t)}
	outcomes := map[string]int{}
	for round := range 6 {
		tok := a.PasswordGrant(t, "demo", "demo")
		const each = 6
		results := make([]refreshResult, 2*each)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range results {
			g := a
			if i%2 == 1 {
				g = b
			}
			wg.Go(func() {
				<-start
				results[i] = postRefresh(t.Context(), g, endpoints[g], tok.RefreshToken)
			})
		}
		close(start)
		wg.Wait()
		var successors, accessTokens []string
		refused := 0
		for i, r := range results {
			switch {
			case r.fault != nil:
				t.Fatalf("round %d, request %d: %v", round, i, r.fault)
			case r.status == http.StatusOK:
				successors = append(successors, r.tok.RefreshToken)
				accessTokens = append(accessTokens, r.tok.AccessToken)
			case r.status == http.StatusBadRequest && r.err.Error == "invalid_grant":
				refused++
			default:
				t.Fatalf("round %d, request %d: %d %+v", round, i, r.status, r.err)
			}
		}
		slices.Sort(successors)
		if n := len(slices.Compact(slices.Clone(successors))); n > 1 {
			t.Fatalf("round %d: %d different successors of one refresh token (double spend)", round, n)
		}
		switch {
		case len(successors) == 0:
			outcomes["all refused"]++
		case refused == 0:
			outcomes["one successor for all"]++
		default:
			outcomes["some refused"]++
			// A refusal is a replay: the family must be revoked, successor
			// and access tokens with it.
			if r := postRefresh(t.Context(), b, endpoints[b], successors[0]); r.status == http.StatusOK {
				t.Fatalf("round %d: %d of %d refused, yet the successor still refreshes on B", round, refused, len(results))
			}
			within(t, "the access tokens of a revoked family refused by A and B", notifiedBound, func() bool {
				for _, at := range accessTokens {
					for _, g := range []*Gatehouse{a, b} {
						if resp, _ := g.Userinfo(t, at); resp.StatusCode == http.StatusOK {
							return false
						}
					}
				}
				return true
			})
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// TestAttackCodeBurst: one authorization code redeemed 4 times on A and 4
// times on B at once. At most one exchange may succeed; when others were
// refused as replays, what the winner got must be revoked on both
// instances (RFC 6749 §4.1.2).
func TestAttackCodeBurst(t *testing.T) {
	t.Parallel()
	a, b := startPair(t, multiConfig(t, "attack-code", true), freshDatabase(t))
	redirect := "http://127.0.0.1:40000/callback"
	endpoints := map[*Gatehouse]string{a: a.TokenEndpoint(t), b: b.TokenEndpoint(t)}
	br := newBrowser(t, a)
	for round := range 4 {
		verifier := oauth2.GenerateVerifier()
		var code string
		if round == 0 {
			code = br.login(br.get(codeURL(a, verifier)), "demo", "demo").params(t, false).Get("code")
		} else {
			code = br.get(codeURL(a, verifier)).params(t, false).Get("code")
		}
		if code == "" {
			t.Fatal("no code")
		}
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
			"code_verifier": {verifier}, "client_id": {publicClient}}
		results := burst(t, 8, a, b, endpoints, func(int) url.Values { return form })
		var won []rawResult
		for i, r := range results {
			switch {
			case r.fault != nil:
				t.Fatalf("round %d, request %d: %v", round, i, r.fault)
			case r.status == http.StatusOK:
				won = append(won, r)
			case r.status != http.StatusBadRequest || r.str("error") != "invalid_grant":
				t.Fatalf("round %d, request %d: %d %v", round, i, r.status, r.body)
			}
		}
		if len(won) > 1 {
			t.Fatalf("round %d: one code exchanged %d times", round, len(won))
		}
		if len(won) == 1 {
			w := won[0]
			if rt := w.str("refresh_token"); rt != "" {
				if r := postRefresh(t.Context(), b, endpoints[b], rt); r.status == http.StatusOK {
					t.Fatalf("round %d: the code was replayed, yet the winner's refresh token refreshes on B", round)
				}
			}
			within(t, "the replayed code's access token refused by A and B", notifiedBound, func() bool {
				ra, _ := a.Userinfo(t, w.str("access_token"))
				rb, _ := b.Userinfo(t, w.str("access_token"))
				return ra.StatusCode == http.StatusUnauthorized && rb.StatusCode == http.StatusUnauthorized
			})
		}
	}
}

// TestAttackLockoutBurst: 12 wrong passwords for one user sent at once,
// half to A and half to B, from one address. The (user, source) pair
// must admit no more than 5 failures across both instances (the counter
// in the store says how many were admitted), and the right password
// must then be refused on both (locked).
func TestAttackLockoutBurst(t *testing.T) {
	t.Parallel()
	dsn := freshDatabase(t)
	a, b := startPair(t, multiConfig(t, "attack-lockout", true), dsn)
	endpoints := map[*Gatehouse]string{a: a.TokenEndpoint(t), b: b.TokenEndpoint(t)}
	results := burst(t, 12, a, b, endpoints, func(i int) url.Values {
		return url.Values{"grant_type": {"password"}, "client_id": {publicClient}, "username": {"trader"}, "password": {fmt.Sprintf("guess-%d", i)}}
	})
	statuses := map[int]int{}
	for _, r := range results {
		statuses[r.status]++
	}
	t.Logf("12 wrong guesses at once on A and B: statuses %v", statuses)

	ctx, cancel := context.WithTimeout(t.Context(), dbTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT counter_key, failures FROM failure_counters`)
	if err != nil {
		t.Fatal(err)
	}
	counters, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Key      []byte
		Failures int
	}])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counters {
		t.Logf("counter %q: %d", c.Key, c.Failures)
		if strings.HasPrefix(string(c.Key), "pair:trader") && c.Failures > 5 {
			t.Errorf("the pair counter admitted %d failures across A and B, more than the limit 5", c.Failures)
		}
	}
	for _, g := range []*Gatehouse{a, b} {
		r := postRaw(t.Context(), g, endpoints[g], url.Values{"grant_type": {"password"}, "client_id": {publicClient},
			"username": {"trader"}, "password": {"trader"}}) // DEMO-ONLY
		if r.status == http.StatusOK {
			t.Errorf("the right password after 12 wrong ones from the same address passes on %s: not locked", g.URL)
		}
	}
}

// TestAttackDeviceCodeBurst: a device authorization made on A is approved
// on B; then its device code is polled 4 times on A and 4 times on B at
// once. At most one poll may get tokens.
func TestAttackDeviceCodeBurst(t *testing.T) {
	t.Parallel()
	a, b := startPair(t, multiConfig(t, "attack-device", true), freshDatabase(t))
	endpoints := map[*Gatehouse]string{a: a.TokenEndpoint(t), b: b.TokenEndpoint(t)}
	r := postRaw(t.Context(), a, a.Issuer+"/connect/deviceauthorization", url.Values{"client_id": {publicClient},
		"scope": {"openid offline_access Service/Market"}})
	if r.fault != nil || r.status != http.StatusOK {
		t.Fatalf("device authorization on A: %d %v %v", r.status, r.body, r.fault)
	}
	done := answerDevice(t, b, r.str("verification_uri_complete"), "demo", "demo", "allow")
	if done.status != http.StatusOK {
		t.Fatalf("approval on B: %d", done.status)
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"},
		"client_id": {publicClient}, "device_code": {r.str("device_code")}}
	results := burst(t, 8, a, b, endpoints, func(int) url.Values { return form })
	won := 0
	errs := map[string]int{}
	for _, r := range results {
		if r.status == http.StatusOK {
			won++
		} else {
			errs[r.str("error")]++
		}
	}
	t.Logf("8 polls at once: %d tokens, refusals %v", won, errs)
	if won > 1 {
		t.Errorf("one device code gave tokens %d times", won)
	}
}
