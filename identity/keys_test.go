package identity

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/keys"
)

func (f *fixture) jwksKids() []string {
	f.t.Helper()
	res := f.do(httptest.NewRequest(http.MethodGet, testIssuer+PathJWKS, nil))
	var set keys.JWKS
	if err := json.Unmarshal([]byte(res.raw), &set); err != nil {
		f.t.Fatal(err)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.Kid)
	}
	return kids
}

func (f *fixture) signingKid() string {
	kid, _ := f.srv.SigningKeyForTest()
	return kid
}

func (f *fixture) sync() {
	f.t.Helper()
	if err := f.srv.syncKeys(context.Background(), f.clock.Now()); err != nil {
		f.t.Fatal(err)
	}
}

func tokenKid(t *testing.T, tok string) string {
	t.Helper()
	var h struct{ Kid string }
	head, _, _ := strings.Cut(tok, ".")
	raw, err := decodeSegment(head)
	if err != nil || json.Unmarshal(raw, &h) != nil {
		t.Fatalf("bad token header %q", head)
	}
	return h.Kid
}

// The whole lifecycle: announce -> sign -> retire -> remove, with tokens
// of the old key verifying until they expire.
func TestKeyRotationSchedule(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Keys = keys.Policy{Period: 10 * 24 * time.Hour, Announce: 24 * time.Hour}
	})
	first := f.signingKid()
	if kids := f.jwksKids(); len(kids) != 1 || kids[0] != first {
		t.Fatalf("first start: %v", kids)
	}
	// Nine days on, nothing changes yet.
	f.clock.Add(9*24*time.Hour - time.Minute)
	f.sync()
	if kids := f.jwksKids(); len(kids) != 1 {
		t.Fatalf("announced too early: %v", kids)
	}
	// Inside the announce window: a successor is published, not signing.
	f.clock.Add(2 * time.Minute)
	f.sync()
	kids := f.jwksKids()
	if len(kids) != 2 || f.signingKid() != first {
		t.Fatalf("announce: kids %v, signing %s", kids, f.signingKid())
	}
	second := kids[1]
	old := f.login("demo", "demo-pw")
	if tokenKid(t, old.str("access_token")) != first {
		t.Fatal("announced key signed before its time")
	}
	// Past the retirement: the successor signs, the old key stays
	// published, and the old token still works.
	f.clock.Add(24 * time.Hour)
	f.sync()
	if f.signingKid() != second || len(f.jwksKids()) != 2 {
		t.Fatalf("after retirement: signing %s, kids %v", f.signingKid(), f.jwksKids())
	}
	if res := f.login("demo", "demo-pw"); tokenKid(t, res.str("access_token")) != second {
		t.Fatal("new tokens not signed by the successor")
	}
	// Past the retention (longest token lifetime + margin): removed.
	f.clock.Add(2 * time.Hour)
	f.sync()
	if kids := f.jwksKids(); len(kids) != 1 || kids[0] != second {
		t.Fatalf("after retention: %v", kids)
	}
	if _, err := f.srv.Keys().Key(context.Background(), first); err == nil {
		t.Fatal("removed key still verifies")
	}
}

// A token issued just before the old key retires verifies for its whole
// lifetime.
func TestTokenOutlivesItsKeysRetirement(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Keys = keys.Policy{Period: 2 * 24 * time.Hour, Announce: 24 * time.Hour}
	})
	f.clock.Add(2*24*time.Hour - time.Minute)
	f.sync()
	tok := f.login("demo", "demo-pw").str("access_token")
	for range 6 {
		f.clock.Add(10 * time.Minute)
		f.sync()
		if res := f.userinfo("GET", tok); res.status != 200 {
			t.Fatalf("token refused %v after issue: %d %v", f.clock.Now(), res.status, res.header)
		}
	}
}

// No instance ran for longer than a period: a key signs at once; one
// that ran late announces the successor for the full announce time,
// extending the signing key.
func TestKeyScheduleCatchUp(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Keys = keys.Policy{Period: 10 * 24 * time.Hour, Announce: 24 * time.Hour}
	})
	first := f.signingKid()
	f.clock.Add(10*24*time.Hour - time.Hour) // one hour before retirement, nothing announced
	f.sync()
	infos, err := keys.List(context.Background(), f.st, f.clock.Now())
	if err != nil || len(infos) != 2 {
		t.Fatalf("%v %v", infos, err)
	}
	if !infos[0].RetireAt.Equal(f.clock.Now().Add(24*time.Hour)) || !infos[1].SignFrom.Equal(infos[0].RetireAt) {
		t.Fatalf("late announce not extended: %+v", infos)
	}
	if infos[0].Status != "signing" || infos[1].Status != "announced" || f.signingKid() != first {
		t.Fatalf("statuses %+v", infos)
	}
	f.clock.Add(40 * 24 * time.Hour)
	f.sync()
	if err := f.srv.signsNow(); err != nil {
		t.Fatal("no key signs after a long outage")
	}
}

func TestForcedRotation(t *testing.T) {
	f := newFixture(t)
	first := f.signingKid()
	kid, err := f.srv.RotateKeys(context.Background(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	if f.signingKid() != first || len(f.jwksKids()) != 2 {
		t.Fatal("an announced rotation signed at once")
	}
	f.clock.Add(24*time.Hour + time.Second)
	if f.signingKid() != kid {
		t.Fatal("rotated key does not sign after the announce time")
	}
	now, err := f.srv.RotateKeys(context.Background(), "", true)
	if err != nil || f.signingKid() != now {
		t.Fatalf("immediate rotation: %v", err)
	}
	// The CLI's path, on the store directly, is picked up by the next sync.
	cli, err := keys.Rotate(context.Background(), f.st, keys.Policy{}, keys.RS256, f.clock.Now(), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.sync()
	if f.signingKid() != cli {
		t.Fatal("rotation through the store not picked up")
	}
}

func TestKeyEncryptionAtRest(t *testing.T) {
	kek := bytes.Repeat([]byte{7}, 32)
	f := newFixture(t, func(c *Config) { c.Keys.EncryptionKey = kek })
	tok := f.login("demo", "demo-pw").str("access_token")
	stored, err := f.st.SigningKeys(context.Background())
	if err != nil || len(stored) != 1 || !bytes.HasPrefix(stored[0].Private, []byte("gatehouse-kek-v1:")) {
		t.Fatalf("key stored in the clear: %v", err)
	}
	infos, _ := keys.List(context.Background(), f.st, f.clock.Now())
	if !infos[0].Encrypted {
		t.Fatal("ListKeys: not encrypted")
	}
	for name, key := range map[string][]byte{"no key": nil, "wrong key": bytes.Repeat([]byte{8}, 32)} {
		cfg := f.cfg
		cfg.Keys.EncryptionKey = key
		if _, err := NewServer(context.Background(), cfg, f.st); err == nil {
			t.Errorf("%s: started", name)
		}
	}
	f.restart()
	if res := f.userinfo("GET", tok); res.status != 200 {
		t.Fatal("restart with the right key lost the signing key")
	}
	if _, err := NewServer(context.Background(), Config{Issuer: testIssuer, Keys: keys.Policy{EncryptionKey: []byte("short")}}, f.st); err == nil {
		t.Fatal("short key accepted")
	}
}

// A schedule pass keeps the loaded keys, so cached verifications survive.
func TestSyncKeepsVerifierCache(t *testing.T) {
	f := newFixture(t)
	tok := f.login("demo", "demo-pw").str("access_token")
	if res := f.userinfo("GET", tok); res.status != 200 {
		t.Fatal(res.raw)
	}
	hits := f.srv.Verifier().Stats().CacheHits
	f.sync()
	if res := f.userinfo("GET", tok); res.status != 200 {
		t.Fatal(res.raw)
	}
	if f.srv.Verifier().Stats().CacheHits != hits+1 {
		t.Fatal("a schedule pass emptied the verifier cache")
	}
}

// The published key set holds each key's public RSA members only, and
// each kid is the RFC 7638 thumbprint of the key it names: with an
// announced successor too.
func TestJWKSPublicMembersOnly(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Keys = keys.Policy{Period: 10 * 24 * time.Hour, Announce: 24 * time.Hour}
	})
	f.clock.Add(9*24*time.Hour + time.Minute) // inside the announce window
	f.sync()
	res := f.do(httptest.NewRequest(http.MethodGet, testIssuer+PathJWKS, nil))
	var set struct{ Keys []map[string]any }
	if err := json.Unmarshal([]byte(res.raw), &set); err != nil || len(set.Keys) != 2 {
		t.Fatalf("%s: %v", res.raw, err)
	}
	allowed := map[string]bool{"kty": true, "use": true, "kid": true, "alg": true, "n": true, "e": true}
	for _, k := range set.Keys {
		for name := range k {
			if !allowed[name] {
				t.Errorf("JWK %v has member %q", k["kid"], name)
			}
		}
		n, _ := k["n"].(string)
		e, _ := k["e"].(string)
		sum := sha256.Sum256([]byte(`{"e":"` + e + `","kty":"RSA","n":"` + n + `"}`))
		if k["kid"] != base64.RawURLEncoding.EncodeToString(sum[:]) || k["use"] != "sig" || k["alg"] != "RS256" || k["kty"] != "RSA" {
			t.Errorf("JWK %v: kid is not its thumbprint, or use, alg or kty wrong", k)
		}
	}
}

// A rotation that revokes (the CLI's keys rotate --immediately --revoke,
// for a key that may be compromised) leaves only the new key: once a
// server reloads its keys, tokens the old ones signed are refused, cached
// verifications included, and the key set publishes the new key alone.
func TestRotationRevoking(t *testing.T) {
	f := newFixture(t)
	old := f.signingKid()
	tok := f.login("demo", "demo-pw").str("access_token")
	if res := f.userinfo("GET", tok); res.status != 200 { // cached now
		t.Fatal(res.raw)
	}
	kid, err := keys.RotateRevoking(context.Background(), f.st, keys.Policy{}, keys.RS256, f.clock.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.sync()
	if kids := f.jwksKids(); len(kids) != 1 || kids[0] != kid || f.signingKid() != kid {
		t.Fatalf("key set %v, signing %s; want %s alone (old %s)", kids, f.signingKid(), kid, old)
	}
	if res := f.userinfo("GET", tok); res.status != 401 {
		t.Errorf("a token of the removed key: %d", res.status)
	}
	if res := f.userinfo("GET", f.login("demo", "demo-pw").str("access_token")); res.status != 200 {
		t.Errorf("a token of the new key: %d %s", res.status, res.raw)
	}
}
