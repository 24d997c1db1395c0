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

	"golang.org/x/oauth2"
)

// Several gatehouse instances on one PostgreSQL store (docs/operations.md,
// "Running several instances"): two
// processes, each with its own ports, admin address and data directory,
// sharing a database and one issuer URL. A load balancer in front of them
// would answer on that URL and send each request to either; here A's own
// URL plays it, and each process's client sends what is addressed to it
// to its own process (Options.Issuer). Tokens are valid on both because
// both sign with the keys in the store, publish them all, and check the
// same issuer.

// Timing of the multi-instance tests.
const (
	// multiAnnounce is how long a rotated key is published before it
	// signs (signing_keys announce in multiConfig); keys are re-read
	// every second (check_interval 1s).
	multiAnnounce = 8 * time.Second
	// notifiedBound bounds, with revocation notices, how long a
	// revocation on one instance takes to reach the other's verifier and
	// end its live sessions: a NOTIFY, one read of the revocations, a
	// supervisor walk and a push; tens of milliseconds on an idle
	// machine. It stays under the verifier's 5s poll: with revocations
	// made revocationSpacing apart, polling alone makes one of them wait
	// at least 5s - revocationSpacing = 3.9s, so the test fails when the
	// notices do not work.
	notifiedBound = 3 * time.Second
	// polledBound bounds the same without notices (revocation_notify
	// off): the verifier's poll (5s), then at worst a recheck_interval
	// (3s) and a supervisor walk (1s), and a second for a loaded machine.
	polledBound = 10 * time.Second
	// revocationSpacing separates the revocations of the live tests, so
	// that they fall at different points of the verifier's poll.
	revocationSpacing = 1100 * time.Millisecond
)

// TestMultiInstanceTokens: two instances on one store act as one for
// tokens. A token issued by A refreshes on B, and its chain goes on
// across both; the same refresh token sent to A and B at once gives one
// outcome for its family (the same successor on both, inside the grace
// window, or the family revoked), never two families; a revocation made
// on A shows at once in B's introspection and B's verifier (userinfo);
// a key rotated on A is published by B before either signs with it.
func TestMultiInstanceTokens(t *testing.T) {
	t.Parallel()
	a, b := startPair(t, multiConfig(t, "multi-tokens", true), freshDatabase(t))
	t.Run("refresh across instances", func(t *testing.T) { refreshAcross(t, a, b) })
	t.Run("same refresh token on both at once", func(t *testing.T) { refreshRace(t, a, b) })
	t.Run("revocation on A seen by B", func(t *testing.T) { revocationSeen(t, a, b) })
	t.Run("login session made on A valid on B", func(t *testing.T) { browserSessionAcross(t, a, b) })
	t.Run("key rotated on A published by B before it signs", func(t *testing.T) { rotationPublished(t, a, b) })
}

// browserSessionAcross: a browser's login session lives in the store, so
// a load balancer may send its requests to either instance. A login made
// on A lets B answer prompt=none with a code, which A redeems; a login
// page served by one instance is accepted when posted to the other (its
// pending request and CSRF token are sealed with keys both share); a
// code made on one instance is redeemed once across both.
func browserSessionAcross(t *testing.T, a, b *Gatehouse) {
	redirect := "http://127.0.0.1:40000/callback"
	onA := newBrowser(t, a)
	onB := onA.on(b) // the same browser (cookie jar) reaching B

	verifier := oauth2.GenerateVerifier()
	if onB.hasSession() {
		t.Fatal("a session before the login")
	}
	code := onA.login(onA.get(codeURL(a, verifier)), "demo", "demo").params(t, false).Get("code")
	if code == "" || !onA.hasSession() {
		t.Fatalf("login on A: code %t, session %t", code != "", onA.hasSession())
	}
	status, first := exchangeCode(t, b, publicClient, "", code, redirect, verifier)
	if status != http.StatusOK {
		t.Fatalf("A's code redeemed on B: %d %v", status, first)
	}
	idToken, _ := first["id_token"].(string)
	_, claims := decodeJWT(t, idToken)
	user := claims["sub"]
	if status, body := exchangeCode(t, a, publicClient, "", code, redirect, verifier); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("A's code redeemed again on A after B: %d %v", status, body)
	}

	// B knows the session A made: prompt=none gives a code, no login page.
	verifier = oauth2.GenerateVerifier()
	silent := onB.get(codeURL(b, verifier, "prompt", "none")).params(t, false)
	if silent.Get("error") != "" || silent.Get("code") == "" {
		t.Fatalf("prompt=none on B with A's session: %v", silent)
	}
	status, tok := exchangeCode(t, a, publicClient, "", silent.Get("code"), redirect, verifier)
	if status != http.StatusOK {
		t.Fatalf("B's code redeemed on A: %d %v", status, tok)
	}
	idToken, _ = tok["id_token"].(string)
	if _, claims := decodeJWT(t, idToken); claims["sub"] != user || claims["sid"] == nil {
		t.Fatalf("the id_token of the session across instances: sub %v (the login's %v), sid %v", claims["sub"], user, claims["sid"])
	}

	// A login page from B posted to A (no sticky sessions), in a fresh
	// browser.
	fresh := newBrowser(t, b)
	verifier = oauth2.GenerateVerifier()
	form := fresh.loginForm(fresh.get(codeURL(b, verifier)), "demo", "demo")
	got := fresh.on(a).post("/connect/login", form).params(t, false)
	if got.Get("code") == "" {
		t.Fatalf("B's login page posted to A: %v", got)
	}
	if status, body := exchangeCode(t, b, publicClient, "", got.Get("code"), redirect, verifier); status != http.StatusOK {
		t.Fatalf("the code of B's login page posted to A, redeemed on B: %d %v", status, body)
	}
}

// refreshAcross: a chain begun on A goes on alternately on B and A; each
// access token works on the other instance.
func refreshAcross(t *testing.T, a, b *Gatehouse) {
	tok := a.PasswordGrant(t, "demo", "demo")
	instances := []*Gatehouse{b, a, b, a}
	for i, g := range instances {
		next := g.Refresh(t, tok.RefreshToken)
		if next.RefreshToken == tok.RefreshToken || next.RefreshToken == "" {
			t.Fatalf("refresh %d did not rotate", i)
		}
		other := instances[(i+1)%len(instances)]
		resp, body := other.Userinfo(t, next.AccessToken)
		wantStatus(t, fmt.Sprintf("userinfo on the other instance with the token of refresh %d", i), resp, body, http.StatusOK)
		tok = next
	}
}

// refreshResult is one answer of the token endpoint to a refresh.
type refreshResult struct {
	status int
	tok    tokenResponse
	err    errorResponse
	fault  error
}

// postRefresh refreshes token at endpoint through g's client, from any
// goroutine (it never fails the test).
func postRefresh(ctx context.Context, g *Gatehouse, endpoint, token string) refreshResult {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}, "client_id": {publicClient}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return refreshResult{fault: err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := g.Client.Do(req)
	if err != nil {
		return refreshResult{fault: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return refreshResult{fault: err}
	}
	r := refreshResult{status: resp.StatusCode}
	if resp.StatusCode == http.StatusOK {
		err = json.Unmarshal(body, &r.tok)
	} else {
		err = json.Unmarshal(body, &r.err)
	}
	if err != nil {
		r.fault = fmt.Errorf("%s: %v: %s", resp.Status, err, body)
	}
	return r
}

// refreshRace sends the same refresh token to A and B at once, for
// several fresh families: within the grace window both get the same
// successor (one family, whose next token refreshes); if either is
// refused, the family is revoked and no successor works. Never two
// successors.
func refreshRace(t *testing.T, a, b *Gatehouse) {
	const rounds = 10
	endpoints := []string{a.TokenEndpoint(t), b.TokenEndpoint(t)}
	outcomes := map[string]int{}
	for round := range rounds {
		tok := a.PasswordGrant(t, "demo", "demo")
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make([]refreshResult, 2)
		for i, g := range []*Gatehouse{a, b} {
			wg.Go(func() {
				<-start
				results[i] = postRefresh(t.Context(), g, endpoints[i], tok.RefreshToken)
			})
		}
		close(start)
		wg.Wait()
		var successors []string
		refused := false
		for i, r := range results {
			switch {
			case r.fault != nil:
				t.Fatalf("round %d, instance %d: %v", round, i, r.fault)
			case r.status == http.StatusOK:
				successors = append(successors, r.tok.RefreshToken)
			case r.status == http.StatusBadRequest && r.err.Error == "invalid_grant":
				refused = true
			default:
				t.Fatalf("round %d, instance %d: %d %+v", round, i, r.status, r.err)
			}
		}
		slices.Sort(successors)
		if len(slices.Compact(successors)) > 1 {
			t.Fatalf("round %d: two successors of one refresh token: two families", round)
		}
		switch {
		case len(successors) == 0:
			t.Fatalf("round %d: both refused", round)
		case !refused:
			outcomes["one successor on both"]++
			// The family goes on, from the other instance too.
			b.Refresh(t, a.Refresh(t, successors[0]).RefreshToken)
		default:
			outcomes["family revoked"]++
			resp, body := b.RefreshGrant(t, successors[0])
			wantStatus(t, "the successor of a revoked family", resp, body, http.StatusBadRequest)
		}
	}
	t.Logf("%d rounds: %v", rounds, outcomes)
}

// introspectActive introspects token on g and reports "active".
func introspectActive(t *testing.T, g *Gatehouse, token string) bool {
	t.Helper()
	resp, body := g.Introspect(t, token, serviceSecret)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("introspection: %s: %s", resp.Status, body)
	}
	var r struct {
		Active bool `json:"active"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("introspection: %v: %s", err, body)
	}
	return r.Active
}

// within polls cond until it holds, failing t after bound; it returns how
// long it took.
func within(t *testing.T, what string, bound time.Duration, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !cond() {
		if time.Since(began) > bound {
			t.Fatalf("%s: not within %v", what, bound)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(began)
}

// revocationSeen: an access token revoked on A is refused by B's
// introspection and userinfo within notifiedBound; a refresh family
// revoked on A cannot refresh on B at once (the store), and its access
// token is refused by B's verifier within notifiedBound.
func revocationSeen(t *testing.T, a, b *Gatehouse) {
	tok := a.PasswordGrant(t, "demo", "demo")
	if !introspectActive(t, b, tok.AccessToken) {
		t.Fatal("B's introspection: A's token is not active")
	}
	resp, body := b.Userinfo(t, tok.AccessToken) // now in B's verifier's cache
	wantStatus(t, "B's userinfo with A's token", resp, body, http.StatusOK)
	resp, body = a.Revoke(t, tok.AccessToken)
	wantStatus(t, "revoking the access token on A", resp, body, http.StatusOK)
	d := within(t, "B's introspection and userinfo refuse the revoked token", notifiedBound, func() bool {
		resp, _ := b.Userinfo(t, tok.AccessToken)
		return resp.StatusCode == http.StatusUnauthorized && !introspectActive(t, b, tok.AccessToken)
	})
	t.Logf("an access token revoked on A: refused by B after %v", d.Round(time.Millisecond))

	fam := b.PasswordGrant(t, "demo", "demo")
	resp, body = b.Userinfo(t, fam.AccessToken)
	wantStatus(t, "B's userinfo with its own token", resp, body, http.StatusOK)
	resp, body = a.Revoke(t, fam.RefreshToken)
	wantStatus(t, "revoking B's refresh token on A", resp, body, http.StatusOK)
	resp, body = b.RefreshGrant(t, fam.RefreshToken)
	wantStatus(t, "refreshing on B a family revoked on A", resp, body, http.StatusBadRequest)
	d = within(t, "B's verifier refuses the revoked family's access token", notifiedBound, func() bool {
		resp, _ := b.Userinfo(t, fam.AccessToken)
		return resp.StatusCode == http.StatusUnauthorized
	})
	t.Logf("a family revoked on A: its access token refused by B after %v", d.Round(time.Millisecond))
}

// signedWith issues a client_credentials token on g and returns its kid.
func signedWith(t *testing.T, g *Gatehouse) (kid, token string) {
	t.Helper()
	resp, body := g.PostToken(t, url.Values{"grant_type": {"client_credentials"}}, serviceClient, serviceSecret)
	tok := decodeToken(t, resp, body)
	return kidOf(t, tok.AccessToken), tok.AccessToken
}

// rotationPublished rotates the keys with the CLI on A's config (a new key
// announced multiAnnounce before it signs) and watches both instances
// every pollInterval: B's key set lists the new key before A or B signs a
// token with it, and once they do, each one's tokens of the new key are
// active on the other.
func rotationPublished(t *testing.T, a, b *Gatehouse) {
	old, _ := signedWith(t, a)
	// The new key is the one B did not publish before the rotation: B may
	// publish others besides old (a key retired earlier, until its tokens
	// expire), in any order.
	before := jwksKids(t, b)
	runCLI(t, a, "keys", "rotate")
	began := time.Now()
	var published, signsA, signsB time.Duration
	var tokA, tokB string
	var fresh string
	for signsA == 0 || signsB == 0 {
		at := time.Since(began)
		if at > multiAnnounce+rotateTimeout {
			t.Fatalf("after %v: B published the new key at %v; A signs with it from %v, B from %v", at, published, signsA, signsB)
		}
		if published == 0 {
			for _, kid := range jwksKids(t, b) {
				if kid != old && !slices.Contains(before, kid) {
					published, fresh = at, kid
				}
			}
		}
		for _, s := range []struct {
			g     *Gatehouse
			since *time.Duration
			tok   *string
		}{{a, &signsA, &tokA}, {b, &signsB, &tokB}} {
			if *s.since != 0 {
				continue
			}
			if kid, tok := signedWith(t, s.g); kid != old {
				if published == 0 || kid != fresh {
					t.Fatalf("at %v, %s signs with %s, which B does not publish (B publishes %q)", at, s.g.URL, kid, jwksKids(t, b))
				}
				*s.since, *s.tok = at, tok
			}
		}
		time.Sleep(pollInterval)
	}
	t.Logf("rotation on A: B published the new key after %v; A signed with it from %v, B from %v (announce %v)",
		published.Round(time.Millisecond), signsA.Round(time.Millisecond), signsB.Round(time.Millisecond), multiAnnounce)
	if !slices.Contains(jwksKids(t, a), fresh) {
		t.Fatal("A does not publish the key it signs with")
	}
	if !introspectActive(t, b, tokA) || !introspectActive(t, a, tokB) {
		t.Fatal("a token of the new key is not active on the other instance")
	}
}
