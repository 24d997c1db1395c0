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

	var (
		mu      sync.Mutex
		version atomic.Int64 // sets[:version+1] have been committed
		tokens  []string
		bad     []string
	)
	allowed := func(from, to int64) []entitle.Set {
		mu.Lock()
		defer mu.Unlock()
		return sets[from:min(int(to)+2, len(sets))] // a change may be committing as the request ends
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range changes {
			next := entitle.MustParse(cycle[i%2])
			if i == changes-1 {
				next = entitle.MustParse(cycle[2])
			}
			mu.Lock()
			sets = append(sets, next)
			mu.Unlock()
			f.clock.Add(100 * time.Millisecond)
			now := f.clock.Now()
			if _, err := f.st.UpdateEntitlements(ctx, "demo", func(entitle.Set) (entitle.Set, error) { return next, nil }, now, now.Add(time.Hour)); err != nil {
				mu.Lock()
				bad = append(bad, err.Error())
				mu.Unlock()
			}
			version.Add(1)
			time.Sleep(time.Millisecond)
		}
	})
	for c := range chains {
		wg.Go(func() {
			rt := rts[c]
			for s := range steps {
				from := version.Load()
				results := make([]response, 3)
				var burst sync.WaitGroup
				for i := range results {
					burst.Go(func() { results[i] = f.serve(refreshRequest("app", rt)) })
				}
				burst.Wait()
				ok := allowed(from, version.Load())
				for _, res := range results {
					if res.status != http.StatusOK {
						mu.Lock()
						bad = append(bad, fmt.Sprintf("chain %d step %d: %d %s", c, s, res.status, res.raw))
						mu.Unlock()
						continue
					}
					got, err := unverifiedPairs(res.str("access_token"))
					fits := false
					for _, set := range ok {
						fits = fits || got.SubsetOf(set)
					}
					mu.Lock()
					tokens = append(tokens, res.str("access_token"))
					if err != nil || !fits {
						bad = append(bad, fmt.Sprintf("chain %d step %d: a token holds %v (%v), outside every set held meanwhile %v", c, s, got, err, ok))
					}
					mu.Unlock()
					rt = res.str("refresh_token")
				}
			}
		})
	}
	wg.Wait()
	for _, b := range bad {
		t.Error(b)
	}
	if len(tokens) < chains*steps {
		t.Fatalf("%d tokens issued", len(tokens))
	}

	final := entitle.MustParse(cycle[2])
	v := f.srv.Verifier()
	if err := v.RefreshRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	accepted, narrowed := 0, 0
	for _, tok := range tokens {
		id, err := v.Verify(ctx, tok)
		ve, _ := err.(*verify.Error)
		switch {
		case err == nil:
			accepted++
			if !id.Entitlements.SubsetOf(final) {
				t.Errorf("the verifier accepts a token holding %v after the change to %v", id.Entitlements, final)
			}
		case ve != nil && ve.Reason == verify.ReasonEntitlementsChanged:
			narrowed++
			if !ve.Narrowed.Entitlements.SubsetOf(final) {
				t.Errorf("a token is narrowed to %v, outside %v", ve.Narrowed.Entitlements, final)
			}
		default:
			t.Errorf("a token refused: %v", err)
		}
	}
	t.Logf("%d tokens: %d accepted, %d narrowed", len(tokens), accepted, narrowed)
}
