package identity

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// unverifiedPairs reads the authorization_details of a JWT without
// checking it (the test checks every token with the verifier at its end).
func unverifiedPairs(tok string) (entitle.Set, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return entitle.Set{}, errors.New("not a JWS")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return entitle.Set{}, err
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		return entitle.Set{}, err
	}
	return entitle.FromClaim(claims["authorization_details"])
}

// Entitlements change while refreshes run in parallel bursts (three sends
// of each refresh token at once, the grace window's reissue included): no
// token ever holds a pair outside every set the user held while its
// request ran, and once the changes stop, every token the verifier still
// accepts holds only the last set, and every one it narrows is narrowed
// into it. It failed when the refresh read the family's pairs without the
// user's (tokens held NZX:depth, which the user never held while they
// were asked for).
func TestEntitlementChangesRaceRefreshes(t *testing.T) {
	f := newFixture(t)
	sets := []entitle.Set{entitle.MustParse("ASX:quotes ASX:depth NZX:quotes NZX:depth")}
	f.entitle("demo", sets[0].String())
	// The families hold all four; the user alternates between two sets
	// that neither holds the other, and ends at a third.
	cycle := []string{"ASX:quotes NZX:quotes", "ASX:depth ASX:quotes", "NZX:depth"}
	const chains, steps, changes = 4, 12, 30
	var rts []string
	for range chains {
		res := f.login("demo", "demo-pw", "scope", "Service/Market offline_access")
		if res.status != http.StatusOK {
			t.Fatal(res.raw)
		}
		rts = append(rts, res.str("refresh_token"))
	}

	ch := &entitlementChanger{sets: sets}
	var wg sync.WaitGroup
	wg.Go(func() { ch.run(f, cycle, changes) })
	for c := range chains {
		wg.Go(func() {
			rt := rts[c]
			for s := range steps {
				from := ch.version.Load()
				results := make([]response, 3)
				var burst sync.WaitGroup
				for i := range results {
					burst.Go(func() { results[i] = f.serve(refreshRequest("app", rt)) })
				}
				burst.Wait()
				for _, res := range results {
					if res.status != http.StatusOK {
						ch.report("chain %d step %d: %d %s", c, s, res.status, res.raw)
						continue
					}
					ch.check(fmt.Sprintf("chain %d step %d", c, s), from, res.str("access_token"), nil)
					rt = res.str("refresh_token")
				}
			}
		})
	}
	wg.Wait()
	for _, b := range ch.bad {
		t.Error(b)
	}
	if len(ch.tokens) < chains*steps {
		t.Fatalf("%d tokens issued", len(ch.tokens))
	}

	accepted, narrowed := f.checkWithin(ch.tokens, entitle.MustParse(cycle[2]))
	t.Logf("%d tokens: %d accepted, %d narrowed", len(ch.tokens), accepted, narrowed)
}

// entitlementChanger changes demo's entitlements while requests run, and
// checks the tokens they get against the sets the user held meanwhile.
// Its methods are safe from any goroutine.
type entitlementChanger struct {
	mu      sync.Mutex
	sets    []entitle.Set // every set the user held, in order
	version atomic.Int64  // sets[:version+1] have been committed
	tokens  []string      // every token checked
	bad     []string      // the failures
}

// run makes changes changes, 100 ms of the fixture's clock apart: demo's
// set becomes cycle[0] and cycle[1] in turn, and cycle[2] last.
func (c *entitlementChanger) run(f *fixture, cycle []string, changes int) {
	ctx := context.Background()
	for i := range changes {
		next := entitle.MustParse(cycle[i%2])
		if i == changes-1 {
			next = entitle.MustParse(cycle[2])
		}
		c.mu.Lock()
		c.sets = append(c.sets, next)
		c.mu.Unlock()
		f.clock.Add(100 * time.Millisecond)
		now := f.clock.Now()
		if _, err := f.st.UpdateEntitlements(ctx, "demo", func(entitle.Set) (entitle.Set, error) { return next, nil }, now, now.Add(time.Hour)); err != nil {
			c.report("change %d: %v", i, err)
		}
		c.version.Add(1)
		time.Sleep(time.Millisecond)
	}
}

// report records a failure.
func (c *entitlementChanger) report(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bad = append(c.bad, fmt.Sprintf(format, args...))
}

// check records tok, issued by a request that started at version from
// and has just ended: its pairs must fit in a set the user held
// meanwhile, and be exactly *asked when asked is set.
func (c *entitlementChanger) check(what string, from int64, tok string, asked *entitle.Set) {
	to := c.version.Load()
	got, err := unverifiedPairs(tok)
	c.mu.Lock()
	defer c.mu.Unlock()
	held := c.sets[from:min(int(to)+2, len(c.sets))] // a change may be committing as the request ends
	fits := false
	for _, set := range held {
		fits = fits || got.SubsetOf(set)
	}
	c.tokens = append(c.tokens, tok)
	if err != nil || !fits || (asked != nil && !got.Equal(*asked)) {
		c.bad = append(c.bad, fmt.Sprintf("%s: a token holds %v (%v); asked %v, the user held %v meanwhile", what, got, err, asked, held))
	}
}

// checkWithin verifies every token once the verifier has read the
// revocations: one it accepts must hold only pairs of final, one it
// refuses for an entitlement change must be narrowed into final, and no
// other refusal is expected. It returns how many were accepted and
// narrowed.
func (f *fixture) checkWithin(tokens []string, final entitle.Set) (accepted, narrowed int) {
	f.t.Helper()
	ctx := context.Background()
	v := f.srv.Verifier()
	if err := v.RefreshRevocations(ctx); err != nil {
		f.t.Fatal(err)
	}
	for _, tok := range tokens {
		id, err := v.Verify(ctx, tok)
		ve, _ := err.(*verify.Error)
		switch {
		case err == nil:
			accepted++
			if !id.Entitlements.SubsetOf(final) {
				f.t.Errorf("the verifier accepts a token holding %v after the change to %v", id.Entitlements, final)
			}
		case ve != nil && ve.Reason == verify.ReasonEntitlementsChanged:
			narrowed++
			if !ve.Narrowed.Entitlements.SubsetOf(final) {
				f.t.Errorf("a token is narrowed to %v, outside %v", ve.Narrowed.Entitlements, final)
			}
		default:
			f.t.Errorf("a token refused: %v", err)
		}
	}
	return accepted, narrowed
}
