package verify_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

// entitledToken signs a token of sub issued at iat holding pairs (none:
// no authorization_details claim).
func (f *fixture) entitledToken(t *testing.T, sub, jti string, iat time.Time, pairs string) string {
	t.Helper()
	c := f.issuer.Claims(sub, "Service/Market")
	c["jti"] = jti
	c["iat"] = iat.Unix()
	if pairs != "" {
		var details any
		if err := json.Unmarshal(entitle.MustParse(pairs).MarshalDetails(), &details); err != nil {
			t.Fatal(err)
		}
		c["authorization_details"] = details
	}
	return verifytest.Sign(f.issuer.Header(), c, f.issuer.Private)
}

// change is the entitlement change of sub to pairs at at.
func change(sub, pairs string, at time.Time) store.Revocation {
	set := entitle.MustParse(pairs)
	return store.Revocation{Subject: sub, NotBefore: at, ExpiresAt: at.Add(time.Hour), RevokedAt: at, Entitlements: &set}
}

// An entitlement change refuses the subject's tokens issued before it (and
// those holding a pair it took away, whenever issued) as
// ReasonEntitlementsChanged, with the identity narrowed to the pairs the
// subject still holds; every other token passes. It failed when the check
// ignored the set (the stale-read row passed), and when Narrowed was the
// token's identity unchanged (the NZX rows kept NZX:quotes).
func TestEntitlementChangeNarrows(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	at := f.now.Add(500 * time.Millisecond) // the change, in the middle of a second
	before := f.now.Add(-time.Minute)
	cached := f.entitledToken(t, "trader", "cached", before, "ASX:quotes ASX:depth NZX:quotes")
	if _, err := f.v.Verify(ctx, cached); err != nil {
		t.Fatal(err)
	}
	f.revs.add(change("trader", "ASX:quotes ASX:depth", at))
	if err := f.v.RefreshRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token string
		changed     bool   // refused as changed
		narrowed    string // what Narrowed holds then
	}{
		{"cached token issued before", cached, true, "ASX:depth ASX:quotes"},
		{"token issued before, NZX lost", f.entitledToken(t, "trader", "a", before, "NZX:quotes"), true, ""},
		{"token issued before, nothing lost", f.entitledToken(t, "trader", "b", before, "ASX:quotes"), true, "ASX:quotes"},
		{"token issued before, no pairs", f.entitledToken(t, "trader", "c", before, ""), true, ""},
		{"token of the change's second, within the new set", f.entitledToken(t, "trader", "d", f.now, "ASX:quotes"), false, ""},
		{"token of the change's second, from a stale read", f.entitledToken(t, "trader", "e", f.now, "ASX:quotes NZX:quotes"), true, "ASX:quotes"},
		{"token issued after, from a stale read", f.entitledToken(t, "trader", "f", f.now.Add(2*time.Second), "NZX:quotes"), true, ""},
		{"token issued after, within the new set", f.entitledToken(t, "trader", "g", f.now.Add(2*time.Second), "ASX:depth ASX:quotes"), false, ""},
		{"another subject's token", f.entitledToken(t, "demo", "h", before, "NZX:quotes"), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := f.v.Verify(ctx, tc.token)
			if !tc.changed {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			ve, _ := err.(*verify.Error)
			if ve == nil || ve.Reason != verify.ReasonEntitlementsChanged || id != nil {
				t.Fatalf("Verify = %v, %v; want ReasonEntitlementsChanged", id, err)
			}
			n := ve.Narrowed
			if n == nil || n.Subject != "trader" || !n.HasScope("Service/Market") || n.Entitlements.String() != tc.narrowed {
				t.Fatalf("Narrowed = %+v; want trader holding %q", n, tc.narrowed)
			}
		})
	}
	if got := f.v.Stats().Refused[verify.ReasonEntitlementsChanged]; got < 6 {
		t.Errorf("counted %d refusals as changed", got)
	}
}

// What refuses a token outright still does after an entitlement change,
// and a later change replaces an earlier one (pairs given back are held
// again); a change read late, older than the one held, changes nothing.
// It failed when the subject's revocation was checked after the change
// (the disabled row came out narrowed, not revoked).
func TestEntitlementChangeAndOtherRevocations(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	before := f.now.Add(-time.Minute)
	tok := f.entitledToken(t, "trader", "t1", before, "ASX:quotes NZX:quotes")
	narrowedTo := func() string {
		t.Helper()
		if err := f.v.RefreshRevocations(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := f.v.Verify(ctx, tok)
		ve, _ := err.(*verify.Error)
		switch {
		case err == nil:
			return "accepted"
		case ve != nil && ve.Reason == verify.ReasonEntitlementsChanged:
			return "narrowed to " + ve.Narrowed.Entitlements.String()
		}
		return string(reasonOf(err))
	}
	steps := []struct {
		name string
		add  store.Revocation
		want string
	}{
		{"NZX taken away", change("trader", "ASX:quotes", f.now), "narrowed to ASX:quotes"},
		{"NZX given back", change("trader", "ASX:quotes NZX:quotes", f.now.Add(time.Second)), "narrowed to ASX:quotes NZX:quotes"},
		{"an older change read late", change("trader", "", f.now.Add(-time.Second)), "narrowed to ASX:quotes NZX:quotes"},
		{"the user disabled", store.Revocation{Subject: "trader", NotBefore: f.now.Add(2 * time.Second), ExpiresAt: f.now.Add(time.Hour)}, "revoked"},
	}
	for _, s := range steps {
		f.revs.add(s.add)
		if got := narrowedTo(); got != s.want {
			t.Fatalf("%s: %s, want %s", s.name, got, s.want)
		}
	}
}

// A change makes RevocationsChanged fire, as any revocation does, so the
// gateway checks its sessions at once; and an HTTP resource refuses the
// token (401 invalid_token, saying to refresh).
func TestEntitlementChangeIsARevocationForHTTP(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	tok := f.entitledToken(t, "trader", "t1", f.now.Add(-time.Minute), "ASX:quotes")
	fired := f.v.RevocationsChanged()
	f.revs.add(change("trader", "ASX:quotes", f.now))
	if err := f.v.RefreshRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
	default:
		t.Fatal("RevocationsChanged did not fire for an entitlement change")
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	id, refusal := f.v.Authorize(r, verify.Requirement{})
	if id != nil || refusal == nil || refusal.Status != 401 || refusal.Reason != verify.ReasonEntitlementsChanged ||
		refusal.Description != "the entitlements of the access token changed: refresh it" {
		t.Fatalf("Authorize = %v, %+v", id, refusal)
	}
}
