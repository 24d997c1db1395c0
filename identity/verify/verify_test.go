package verify_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

const issuerURL = "https://issuer.test"

type revocations struct {
	mu          sync.Mutex
	now         func() time.Time
	list        []store.Revocation
	err         error
	full, since int           // reads of each kind
	gate        chan struct{} // when set, each incremental read waits for a receive
}

func (r *revocations) Revocations(context.Context, time.Time) ([]store.Revocation, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.full++
	return slices.Clone(r.list), r.err
}

func (r *revocations) RevocationsSince(_ context.Context, since, _ time.Time) ([]store.Revocation, error) {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.since++
	var out []store.Revocation
	for _, rev := range r.list {
		if !rev.RevokedAt.Before(since) {
			out = append(out, rev)
		}
	}
	return out, r.err
}

func (r *revocations) add(rev store.Revocation) {
	r.mu.Lock()
	if rev.RevokedAt.IsZero() {
		rev.RevokedAt = r.now()
	}
	r.list = append(r.list, rev)
	r.mu.Unlock()
}

func (r *revocations) revoke(jti string) { r.add(store.Revocation{JTI: jti}) }

func (r *revocations) reads() (full, since int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.full, r.since
}

func (r *revocations) fail(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

type fixture struct {
	now    time.Time
	issuer *verifytest.Issuer
	revs   *revocations
	v      *verify.Verifier
}

func newFixture(t *testing.T, mutate ...func(*verify.Config)) *fixture {
	f := &fixture{now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	clock := func() time.Time { return f.now }
	f.revs = &revocations{now: clock}
	f.issuer = verifytest.NewIssuer(t, issuerURL, clock)
	cfg := verify.Config{Issuer: issuerURL, Keys: f.issuer, Revocations: f.revs, Now: clock}
	for _, m := range mutate {
		m(&cfg)
	}
	v, err := verify.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.v = v
	return f
}

func reasonOf(err error) verify.Reason {
	if ve, ok := errors.AsType[*verify.Error](err); ok {
		return ve.Reason
	}
	return ""
}

func TestGoodToken(t *testing.T) {
	f := newFixture(t)
	id, err := f.v.Verify(t.Context(), f.issuer.Token("alice", "Service/Market", "Service/News"))
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != "alice" || id.ClientID != "test-client" || !slices.Equal(id.Scopes, []string{"Service/Market", "Service/News"}) ||
		!id.HasScope("Service/News") || id.HasScope("Service/Trading") || id.JTI == "" || !id.Expiry.Equal(f.now.Add(time.Hour)) {
		t.Fatalf("identity %+v", id)
	}
	// scope as an array, aud as an array, typ with the application/ prefix.
	h, c := f.issuer.Header(), f.issuer.Claims("bob")
	h["typ"] = "application/at+JWT"
	c["scope"] = []string{"a", "b"}
	c["aud"] = []string{"other", "gatehouse"}
	id, err = f.v.Verify(t.Context(), verifytest.Sign(h, c, f.issuer.Private))
	if err != nil || !slices.Equal(id.Scopes, []string{"a", "b"}) || !id.Entitlements.IsEmpty() {
		t.Fatalf("%+v %v", id, err)
	}
	// Entitlements: the market_data entries of authorization_details;
	// entries of other types are not ours to read.
	c = f.issuer.Claims("carol")
	c["authorization_details"] = []any{
		map[string]any{"type": "market_data", "venue": "NZX", "feeds": []string{"quotes"}},
		map[string]any{"type": "payment_initiation", "amount": 1},
		map[string]any{"type": "market_data", "venue": "ASX", "feeds": []string{"quotes", "depth"}},
	}
	id, err = f.v.Verify(t.Context(), verifytest.Sign(f.issuer.Header(), c, f.issuer.Private))
	if err != nil || id.Entitlements.String() != "ASX:depth ASX:quotes NZX:quotes" {
		t.Fatalf("entitlements %v, %v", id.Entitlements, err)
	}
}

// Every hostile token is refused with its own reason, cold and then again
// (a refused token is never cached).
func TestHostileTokens(t *testing.T) {
	f := newFixture(t)
	for _, tc := range f.issuer.Hostile("Service/Market") {
		t.Run(tc.Name, func(t *testing.T) {
			for range 2 {
				id, err := f.v.Verify(t.Context(), tc.Token)
				if id != nil || reasonOf(err) != tc.Reason {
					t.Fatalf("got %v, %v; want reason %s", id, err, tc.Reason)
				}
			}
		})
	}
}

func TestLeeway(t *testing.T) {
	f := newFixture(t, func(c *verify.Config) { c.Leeway = 30 * time.Second })
	tok := f.issuer.Token("alice")
	f.now = f.now.Add(time.Hour + 20*time.Second)
	if _, err := f.v.Verify(t.Context(), tok); err != nil {
		t.Fatalf("inside the leeway: %v", err)
	}
	f.now = f.now.Add(20 * time.Second)
	if _, err := f.v.Verify(t.Context(), tok); reasonOf(err) != verify.ReasonExpired {
		t.Fatalf("past the leeway: %v", err)
	}
}

func TestRevocation(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	cached := f.issuer.Token("alice", "x")
	if _, err := f.v.Verify(ctx, cached); err != nil {
		t.Fatal(err)
	}
	cold := f.issuer.Token("bob", "y")
	f.revs.revoke("jti-alice-x")
	f.revs.revoke("jti-bob-y")
	if err := f.v.RefreshRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"after it was cached": cached, "before it was cached": cold} {
		if _, err := f.v.Verify(ctx, tok); reasonOf(err) != verify.ReasonRevoked {
			t.Errorf("%s: %v", name, err)
		}
	}
	// While the store is unreachable the last list keeps applying.
	f.revs.fail(errors.New("database down"))
	if err := f.v.RefreshRevocations(ctx); err == nil || !f.v.RevocationsStale() {
		t.Fatal("failure not reported")
	}
	if _, err := f.v.Verify(ctx, cached); reasonOf(err) != verify.ReasonRevoked {
		t.Fatalf("revocation forgotten during an outage: %v", err)
	}
	if _, err := f.v.Verify(ctx, f.issuer.Token("carol")); err != nil {
		t.Fatalf("live sessions must survive the outage: %v", err)
	}
	f.revs.fail(nil)
	if err := f.v.RefreshRevocations(ctx); err != nil || f.v.RevocationsStale() {
		t.Fatal("did not recover")
	}
}

func TestCache(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	tok := f.issuer.Token("alice")
	first, err := f.v.Verify(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.v.Verify(ctx, tok)
	if err != nil || second != first {
		t.Fatal("second verification was not a cache hit")
	}
	if s := f.v.Stats(); s.CacheHits != 1 || s.CacheMisses != 1 {
		t.Fatalf("stats %+v", s)
	}
	t.Run("never outlives exp", func(t *testing.T) {
		f.now = f.now.Add(time.Hour)
		if _, err := f.v.Verify(ctx, tok); err != nil {
			t.Fatalf("inside the leeway after exp: %v", err) // cold path applies the leeway
		}
		f.now = f.now.Add(time.Minute)
		if _, err := f.v.Verify(ctx, tok); reasonOf(err) != verify.ReasonExpired {
			t.Fatalf("expired token served: %v", err)
		}
	})
	t.Run("dropped with its key", func(t *testing.T) {
		f := newFixture(t)
		tok := f.issuer.Token("alice")
		if _, err := f.v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
		f.issuer.RemoveKey()
		if _, err := f.v.Verify(ctx, tok); reasonOf(err) != verify.ReasonUnknownKey {
			t.Fatalf("token of a removed key served: %v", err)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		f := newFixture(t, func(c *verify.Config) { c.CacheSize = 16 })
		for i := range 100 {
			if _, err := f.v.Verify(ctx, f.issuer.Token("u", string(rune('a'+i%26)), string(rune('a'+i/26)))); err != nil {
				t.Fatal(err)
			}
		}
		if n := verify.CacheLen(f.v); n > 16 {
			t.Fatalf("cache holds %d entries, bound 16", n)
		}
	})
	t.Run("emptied once its tokens expired", func(t *testing.T) {
		// A day of sessions fills the cache; once their tokens expired it
		// holds nothing, with no verification to sweep it, and its map is
		// made anew (a Go map keeps the room it grew to).
		f := newFixture(t)
		for i := range 300 {
			if _, err := f.v.Verify(ctx, f.issuer.Token("u"+strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
		if scheduled, room := verify.SweepCache(f.v); !scheduled || room != 300 || verify.CacheLen(f.v) != 300 {
			t.Fatalf("live tokens: scheduled %v, room %d, %d entries; want a sweep scheduled and 300 kept", scheduled, room, verify.CacheLen(f.v))
		}
		f.now = f.now.Add(2 * time.Hour)
		scheduled, room := verify.SweepCache(f.v)
		if n := verify.CacheLen(f.v); n != 0 || room != 0 || scheduled {
			t.Fatalf("expired tokens: %d entries, room %d, scheduled %v; want none", n, room, scheduled)
		}
	})
	t.Run("ended by Close", func(t *testing.T) {
		// A verifier a config reload replaced is let go while its tokens
		// live on: its cache must not keep itself (its scheduled sweep),
		// its entries and their keys until they expire.
		f := newFixture(t)
		tok := f.issuer.Token("alice")
		if _, err := f.v.Verify(ctx, tok); err != nil || verify.CacheLen(f.v) != 1 || !verify.SweepScheduled(f.v) {
			t.Fatalf("before Close: %v, %d entries, sweep scheduled %v; want one entry and a sweep", err, verify.CacheLen(f.v), verify.SweepScheduled(f.v))
		}
		f.v.Close()
		if n, scheduled := verify.CacheLen(f.v), verify.SweepScheduled(f.v); n != 0 || scheduled {
			t.Fatalf("after Close: %d entries, sweep scheduled %v; want none", n, scheduled)
		}
		if _, err := f.v.Verify(ctx, tok); err != nil || verify.CacheLen(f.v) != 0 {
			t.Fatalf("a verification after Close: %v, %d entries; want it verified, uncached", err, verify.CacheLen(f.v))
		}
	})
}

func TestConfig(t *testing.T) {
	issuer := verifytest.NewIssuer(t, issuerURL, time.Now)
	tests := []struct {
		name string
		cfg  verify.Config
	}{
		{"no issuer", verify.Config{Keys: issuer}},
		{"no keys", verify.Config{Issuer: issuerURL}},
		{"HMAC algorithm", verify.Config{Issuer: issuerURL, Keys: issuer, Algorithms: []string{"HS256"}}},
		{"none algorithm", verify.Config{Issuer: issuerURL, Keys: issuer, Algorithms: []string{"none"}}},
		{"huge leeway", verify.Config{Issuer: issuerURL, Keys: issuer, Leeway: time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := verify.New(t.Context(), tt.cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// Malformed forms the parser must refuse with its own reasons.
func TestMalformedTokens(t *testing.T) {
	f := newFixture(t)
	good := f.issuer.Token("alice")
	with := func(mod func(h, c map[string]any)) string {
		h, c := f.issuer.Header(), f.issuer.Claims("alice")
		mod(h, c)
		return verifytest.Sign(h, c, f.issuer.Private)
	}
	tests := []struct {
		name  string
		token string
		want  verify.Reason
	}{
		{"four segments", good + ".x", verify.ReasonMalformed},
		{"two segments", good[:strings.LastIndexByte(good, '.')], verify.ReasonMalformed},
		{"padded base64 signature", good + "==", verify.ReasonMalformed},
		{"header not JSON", "bm90LWpzb24." + strings.SplitN(good, ".", 2)[1], verify.ReasonMalformed},
		{"critical extension", with(func(h, _ map[string]any) { h["crit"] = []string{"exp"} }), verify.ReasonMalformed},
		{"numeric kid", with(func(h, _ map[string]any) { h["kid"] = 7 }), verify.ReasonUnknownKey},
		{"no kid", with(func(h, _ map[string]any) { delete(h, "kid") }), verify.ReasonUnknownKey},
		{"PS256 when RS256 is pinned", with(func(h, _ map[string]any) { h["alg"] = "PS256" }), verify.ReasonAlgorithm},
		{"x5c header", with(func(h, _ map[string]any) { h["x5c"] = []string{"MIIB"} }), verify.ReasonForeignKey},
		{"no sub", with(func(_, c map[string]any) { delete(c, "sub") }), verify.ReasonMalformed},
		{"scope of numbers", with(func(_, c map[string]any) { c["scope"] = []int{1} }), verify.ReasonMalformed},
		{"iat in the future", with(func(_, c map[string]any) { c["iat"] = f.now.Add(time.Hour).Unix() }), verify.ReasonNotYetValid},
		{"exp as a string", with(func(_, c map[string]any) { c["exp"] = "tomorrow" }), verify.ReasonMalformed},
		{"market_data entry with two venues", with(func(_, c map[string]any) {
			c["authorization_details"] = []any{map[string]any{"type": "market_data", "venue": "ASX", "venues": []string{"NZX"}, "feeds": []string{"quotes"}}}
		}), verify.ReasonMalformed},
		{"market_data venue in lower case", with(func(_, c map[string]any) {
			c["authorization_details"] = []any{map[string]any{"type": "market_data", "venue": "asx", "feeds": []string{"quotes"}}}
		}), verify.ReasonMalformed},
		{"authorization_details an object", with(func(_, c map[string]any) {
			c["authorization_details"] = map[string]any{"type": "market_data"}
		}), verify.ReasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := f.v.Verify(t.Context(), tt.token); reasonOf(err) != tt.want {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
		})
	}
}

// Verify decodes only the claims it checks: the full claim map is decoded
// on the first call of Claims, once, and shared through the cache.
func TestClaimsDecodedOnDemand(t *testing.T) {
	f := newFixture(t)
	tok := f.issuer.Token("alice", "a")
	id, err := f.v.Verify(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if verify.ClaimsDecoded(id) {
		t.Fatal("claims decoded by Verify")
	}
	if again, err := f.v.Verify(t.Context(), tok); err != nil || again != id || verify.ClaimsDecoded(id) {
		t.Fatalf("cache hit %v (same identity: %t) decoded the claims", err, again == id)
	}
	c := id.Claims()
	if !verify.ClaimsDecoded(id) {
		t.Fatal("Claims did not decode")
	}
	if c["sub"] != "alice" || c["client_id"] != "test-client" || c["scope"] != "a" {
		t.Fatalf("claims %v", c)
	}
	c["sub"] = "changed" // the map is shared: a second call decodes nothing
	if id.Claims()["sub"] != "changed" {
		t.Fatal("claims decoded twice")
	}
}
