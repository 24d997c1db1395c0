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

// Parallel bursts against two gatehouse processes (A and B, startPair)
// sharing one PostgreSQL store: one refresh token, one code, one device
// code and wrong passwords for one user, sent to both at once. The
// defences held when these tests were written.

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

// TestMultiRefreshBurst: one refresh token sent 6 times to A and 6 times
// to B at once, for several families. Every success must carry the same
// successor (one family), and if any request is refused as a replay, no
// successor may refresh.
func TestMultiRefreshBurst(t *testing.T) {
	t.Parallel()
	a, b := startPair(t, multiConfig(t, "burst-refresh", true), freshDatabase(t))
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

// TestMultiCodeBurst: one authorization code redeemed 4 times on A and 4
// times on B at once. At most one exchange may succeed; when others were
// refused as replays, what the winner got must be revoked on both
// instances (RFC 6749 §4.1.2).
func TestMultiCodeBurst(t *testing.T) {
	t.Parallel()
	a, b := startPair(t, multiConfig(t, "burst-code", true), freshDatabase(t))
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

// TestMultiLockoutBurst: 12 wrong passwords for one user sent at once,
// half to A and half to B, from one address. The (user, source) pair
// must admit no more than 5 failures across both instances (the counter
// in the store says how many were admitted), and the right password
// must then be refused on both (locked).
func TestMultiLockoutBurst(t *testing.T) {
	t.Parallel()
	dsn := freshDatabase(t)
	a, b := startPair(t, multiConfig(t, "burst-lockout", true), dsn)
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

// TestMultiDeviceCodeBurst: a device authorization made on A is approved
// on B; then its device code is polled 4 times on A and 4 times on B at
// once. At most one poll may get tokens.
func TestMultiDeviceCodeBurst(t *testing.T) {
	t.Parallel()
	a, b := startPair(t, multiConfig(t, "burst-device", true), freshDatabase(t))
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
