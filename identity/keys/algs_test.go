package keys_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/verify"
)

const testIssuer = "https://issuer.test"

// allAlgs is a policy keeping keys of every algorithm, sealed.
func allAlgs() keys.Policy {
	return keys.Policy{Period: 10 * 24 * time.Hour, Announce: 24 * time.Hour, EncryptionKey: []byte(strings.Repeat("k", 32)),
		Algorithms: []string{keys.RS256, keys.ES256, keys.EdDSA}}
}

// revocationList is a verify.RevocationLister of fixed revocations.
type revocationList []store.Revocation

func (l revocationList) Revocations(context.Context, time.Time) ([]store.Revocation, error) {
	return l, nil
}

func (l revocationList) RevocationsSince(context.Context, time.Time, time.Time) ([]store.Revocation, error) {
	return l, nil
}

// managerFixture is a manager of every algorithm on a store, synced at
// t0, and a verifier of its keys, on a clock the test moves.
type managerFixture struct {
	t   *testing.T
	st  store.Store
	m   *keys.Manager
	now time.Time
}

func newManagerFixture(t *testing.T, pol keys.Policy) *managerFixture {
	f := &managerFixture{t: t, st: openStore(t), now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	m, err := keys.NewManager(f.st, pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	f.sync()
	return f
}

func (f *managerFixture) sync() {
	f.t.Helper()
	if err := f.m.Sync(f.t.Context(), f.now); err != nil {
		f.t.Fatal(err)
	}
}

func (f *managerFixture) verifier(revoked ...store.Revocation) *verify.Verifier {
	f.t.Helper()
	cfg := verify.Config{Issuer: testIssuer, Keys: f.m.Source(func() time.Time { return f.now }),
		Now: func() time.Time { return f.now }, CacheSize: -1}
	if revoked != nil {
		cfg.Revocations = revocationList(revoked)
	}
	v, err := verify.New(f.t.Context(), cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

func (f *managerFixture) token(alg, jti string) string {
	f.t.Helper()
	tok, err := f.m.Sign(alg, "at+jwt", map[string]any{"iss": testIssuer, "sub": "alice", "aud": "gatehouse",
		"exp": f.now.Add(time.Hour).Unix(), "iat": f.now.Unix(), "jti": jti}, f.now)
	if err != nil {
		f.t.Fatal(err)
	}
	return tok
}

// jwks is the published key set, by kid.
func (f *managerFixture) jwks() map[string]keys.JWK {
	f.t.Helper()
	raw, err := f.m.JWKS(f.now)
	if err != nil {
		f.t.Fatal(err)
	}
	var set keys.JWKS
	if err := json.Unmarshal(raw, &set); err != nil {
		f.t.Fatal(err)
	}
	out := map[string]keys.JWK{}
	for _, k := range set.Keys {
		out[k.Kid] = k
	}
	return out
}

func header(t *testing.T, tok string) (alg, kid string) {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	var h struct{ Alg, Kid string }
	if err != nil || json.Unmarshal(raw, &h) != nil {
		t.Fatalf("bad header in %q", tok)
	}
	return h.Alg, h.Kid
}

// Each algorithm has its own key and its own schedule: published with
// its alg and key type, signing tokens the verifier accepts, a successor
// announced before it retires, the old key published until its removal,
// a rotation of one algorithm leaving the others alone, and every private
// key sealed at rest with its algorithm stored beside it.
func TestKeyLifecyclePerAlgorithm(t *testing.T) {
	f := newManagerFixture(t, allAlgs())
	wantJWK := map[string]struct{ kty, crv string }{keys.RS256: {"RSA", ""}, keys.ES256: {"EC", "P-256"}, keys.EdDSA: {"OKP", "Ed25519"}}
	first := map[string]string{}
	v := f.verifier()
	for _, alg := range keys.Algorithms {
		tok := f.token(alg, "first-"+alg)
		gotAlg, kid := header(t, tok)
		j, ok := f.jwks()[kid]
		if gotAlg != alg || !ok || j.Alg != alg || j.Kty != wantJWK[alg].kty || j.Crv != wantJWK[alg].crv || j.Use != "sig" {
			t.Fatalf("%s: header alg %s, JWK %+v", alg, gotAlg, j)
		}
		if _, err := v.Verify(t.Context(), tok); err != nil {
			t.Fatalf("%s token refused: %v", alg, err)
		}
		first[alg] = kid
	}
	if n := len(f.jwks()); n != 3 {
		t.Fatalf("%d keys published at first, want 3", n)
	}
	stored, err := f.st.SigningKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, sk := range stored {
		if !strings.HasPrefix(string(sk.Private), "gatehouse-kek-v1:") || f.jwks()[sk.ID].Alg != sk.Algorithm {
			t.Fatalf("stored key %s (%s): sealed %t, published as %s", sk.ID, sk.Algorithm,
				strings.HasPrefix(string(sk.Private), "gatehouse-kek-v1:"), f.jwks()[sk.ID].Alg)
		}
	}

	// Inside the announce window: one successor per algorithm, published,
	// not signing.
	f.now = f.now.Add(9*24*time.Hour + time.Minute)
	f.sync()
	if n := len(f.jwks()); n != 6 {
		t.Fatalf("%d keys published in the announce window, want 6", n)
	}
	for _, alg := range keys.Algorithms {
		if _, kid := header(t, f.token(alg, "x")); kid != first[alg] {
			t.Fatalf("%s: the announced key signs early", alg)
		}
	}
	// Past the retirement: the successors sign; the old keys stay
	// published and their tokens verify.
	f.now = f.now.Add(24*time.Hour - 11*time.Minute)
	old := f.token(keys.ES256, "old")
	f.now = f.now.Add(11 * time.Minute)
	f.sync()
	for _, alg := range keys.Algorithms {
		if _, kid := header(t, f.token(alg, "x")); kid == first[alg] {
			t.Fatalf("%s: the retired key still signs", alg)
		}
	}
	if _, err := f.verifier().Verify(t.Context(), old); err != nil {
		t.Fatalf("a token of the retired ES256 key: %v", err)
	}
	// Past the retention: removed.
	f.now = f.now.Add(keys.DefaultRetention + time.Minute)
	f.sync()
	if n := len(f.jwks()); n != 3 {
		t.Fatalf("%d keys published after the retention, want 3", n)
	}
	// A forced rotation of one algorithm leaves the others alone.
	before := f.jwks()
	kid, err := f.m.Rotate(t.Context(), keys.EdDSA, f.now, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, got := header(t, f.token(keys.EdDSA, "x")); got != kid {
		t.Fatal("the rotated EdDSA key does not sign")
	}
	for _, alg := range []string{keys.RS256, keys.ES256} {
		if _, got := header(t, f.token(alg, "x")); before[got].Alg != alg {
			t.Fatalf("rotating EdDSA changed the %s key", alg)
		}
	}
	if _, err := f.m.Rotate(t.Context(), "HS256", f.now, true); err == nil {
		t.Fatal("rotated an algorithm the policy keeps no keys for")
	}
	list, err := keys.List(t.Context(), f.st, f.now)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list, func(i keys.Info) bool { return i.ID == kid && i.Algorithm == keys.EdDSA && i.Status == "signing" }) {
		t.Fatalf("List: %+v", list)
	}
}

// A stored key is used with the algorithm its type signs with only: one
// stored under another algorithm does not load. (It failed when
// parseStoredKey did not compare the two: the EC key loaded as RS256.)
func TestStoredKeyOfAnotherType(t *testing.T) {
	st := openStore(t)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if err := st.AddSigningKey(t.Context(), store.SigningKey{ID: "ec-as-rsa", Algorithm: keys.RS256, Private: der,
		Created: now, SignFrom: now}); err != nil {
		t.Fatal(err)
	}
	m, err := keys.NewManager(st, keys.Policy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(t.Context(), now); err == nil || !strings.Contains(err.Error(), "stored as RS256") {
		t.Fatalf("Sync: %v", err)
	}
}

// p256 is P-256's order and half of it.
var (
	p256N    = elliptic.P256().Params().N
	p256Half = new(big.Int).Rsh(p256N, 1)
)

// twin is tok with its ES256 signature (r, s) replaced by (r, n−s), which
// ECDSA verification accepts as well.
func twin(t *testing.T, tok string) string {
	t.Helper()
	i := strings.LastIndexByte(tok, '.')
	sig, err := base64.RawURLEncoding.DecodeString(tok[i+1:])
	if err != nil || len(sig) != 64 {
		t.Fatalf("not an ES256 signature: %q", tok[i+1:])
	}
	s := new(big.Int).SetBytes(sig[32:])
	s.Sub(p256N, s)
	out := append([]byte(nil), sig[:32]...)
	out = append(out, s.FillBytes(make([]byte, 32))...)
	return tok[:i+1] + base64.RawURLEncoding.EncodeToString(out)
}

// ES256 signatures are JOSE's raw r || s with a low s, and the twin
// (r, n−s) of a token, valid or revoked, is refused, though Go's ECDSA
// check would accept it. (It failed when sign kept a high s: about half
// the signatures; and, with the verifier's low-S check removed, the twin
// was accepted.)
func TestES256LowS(t *testing.T) {
	f := newManagerFixture(t, allAlgs())
	_, signer, err := f.m.SigningKeyFor(keys.ES256, f.now)
	if err != nil {
		t.Fatal(err)
	}
	pub := signer.Public().(*ecdsa.PublicKey)
	for i := range 64 {
		tok := f.token(keys.ES256, "low-s")
		input, sigB64, _ := strings.Cut(tok[strings.IndexByte(tok, '.')+1:], ".")
		input = tok[:strings.IndexByte(tok, '.')] + "." + input
		sig, _ := base64.RawURLEncoding.DecodeString(sigB64)
		digest := sha256.Sum256([]byte(input))
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		if len(sig) != 64 || !ecdsa.Verify(pub, digest[:], r, s) {
			t.Fatalf("signature %d is not a raw r || s of the key", i)
		}
		if s.Cmp(p256Half) > 0 {
			t.Fatalf("signature %d has a high s", i)
		}
		// Go's check accepts the twin: only our low-S rule refuses it.
		if !ecdsa.Verify(pub, digest[:], r, new(big.Int).Sub(p256N, s)) {
			t.Fatal("ECDSA refused the twin: the test shows nothing")
		}
	}
	valid := f.token(keys.ES256, "valid")
	revoked := f.token(keys.ES256, "revoked")
	v := f.verifier(store.Revocation{JTI: "revoked", RevokedAt: f.now, ExpiresAt: f.now.Add(2 * time.Hour)})
	if _, err := v.Verify(t.Context(), valid); err != nil {
		t.Fatalf("the valid token: %v", err)
	}
	for name, tok := range map[string]string{"valid": valid, "revoked": revoked} {
		_, err := v.Verify(t.Context(), twin(t, tok))
		var verr *verify.Error
		if !errors.As(err, &verr) || verr.Reason != verify.ReasonSignature {
			t.Fatalf("the twin of the %s token: %v", name, err)
		}
	}
}

// A token's alg must be the one its key signs with: the type of the key
// and the algorithm it is declared for. Each case signs correctly with
// the server's own key of another algorithm, under another alg header.
// (It failed with both of the verifier's checks removed, keyFits and the
// declared-alg comparison: every case reached the signature check and
// failed there as bad_signature. Each check alone is seen failing in
// verify's TestRemoteIssuerPinsAlgorithms and TestAlgorithmKeyConfusion.)
func TestAlgorithmMustFitTheKey(t *testing.T) {
	f := newManagerFixture(t, allAlgs())
	v := f.verifier()
	signWith := func(headerAlg, keyAlg string) string {
		kid, key, err := f.m.SigningKeyFor(keyAlg, f.now)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := json.Marshal(map[string]any{"alg": headerAlg, "kid": kid, "typ": "at+jwt"})
		c, _ := json.Marshal(map[string]any{"iss": testIssuer, "sub": "mallory", "aud": "gatehouse",
			"exp": f.now.Add(time.Hour).Unix(), "jti": "forged"})
		input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
		method := jwt.GetSigningMethod(keyAlg)
		var k crypto.Signer = key
		if e, ok := key.(ed25519.PrivateKey); ok {
			k = e
		}
		sig, err := method.Sign(input, k)
		if err != nil {
			t.Fatal(err)
		}
		return input + "." + base64.RawURLEncoding.EncodeToString(sig)
	}
	for _, tt := range []struct{ header, key string }{
		{keys.RS256, keys.ES256}, {keys.RS256, keys.EdDSA},
		{keys.ES256, keys.EdDSA}, {keys.ES256, keys.RS256},
		{keys.EdDSA, keys.RS256}, {keys.EdDSA, keys.ES256},
		{"PS256", keys.RS256}, {"ES384", keys.ES256},
	} {
		t.Run(tt.header+" header on the "+tt.key+" key", func(t *testing.T) {
			_, err := v.Verify(t.Context(), signWith(tt.header, tt.key))
			var verr *verify.Error
			if !errors.As(err, &verr) || verr.Reason != verify.ReasonAlgorithm {
				t.Fatalf("got %v, want %s", err, verify.ReasonAlgorithm)
			}
		})
	}
	for _, alg := range []string{keys.RS256, keys.EdDSA} { // jwt's ES256 may make a high s
		if _, err := v.Verify(t.Context(), signWith(alg, alg)); err != nil {
			t.Fatalf("%s on its own key: %v", alg, err)
		}
	}
}

// An ID token of each algorithm is an id_token_hint the end-session
// endpoint takes. (It failed with the hint's methods RS256 alone.)
func TestIDTokenHintOfEachAlgorithm(t *testing.T) {
	f := newManagerFixture(t, allAlgs())
	for _, alg := range keys.Algorithms {
		tok, err := f.m.Sign(alg, "JWT", map[string]any{"iss": testIssuer, "sub": "alice", "aud": "app",
			"exp": f.now.Add(time.Hour).Unix(), "iat": f.now.Unix()}, f.now)
		if err != nil {
			t.Fatal(err)
		}
		hint, err := verify.ParseIDTokenHint(t.Context(), tok, testIssuer, f.m.Source(func() time.Time { return f.now }))
		if err != nil || hint.Subject != "alice" {
			t.Fatalf("%s hint: %+v, %v", alg, hint, err)
		}
	}
}

// TestCachedTokenOfEachAlgorithm: a token of each algorithm verifies twice
// through a verifier with its cache on, the second time from the cache
// (which asks whether the key is still published). It failed with the
// key source comparing the keys with ==: an ed25519.PublicKey is a slice,
// and the second EdDSA verification panicked.
func TestCachedTokenOfEachAlgorithm(t *testing.T) {
	f := newManagerFixture(t, allAlgs())
	v, err := verify.New(t.Context(), verify.Config{Issuer: testIssuer, Keys: f.m.Source(func() time.Time { return f.now }),
		Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, alg := range allAlgs().Algorithms {
		tok := f.token(alg, "cached-"+alg)
		for i := range 3 {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("%s, verification %d: panic %v", alg, i+1, p)
					}
				}()
				if _, err := v.Verify(t.Context(), tok); err != nil {
					t.Fatalf("%s, verification %d: %v", alg, i+1, err)
				}
			}()
		}
	}
}

// A key of an algorithm the configuration no longer keeps retires at the
// next Sync and leaves the key set after the retention, with automatic
// rotation off too; its tokens verify until then. (It failed when Sync
// scheduled only the configured algorithms: the ES256 key signed and was
// published for good.)
func TestDroppedAlgorithmRetires(t *testing.T) {
	pol := allAlgs()
	pol.Period = -1 // no automatic rotation
	f := newManagerFixture(t, pol)
	tok := f.token(keys.ES256, "before-the-drop")
	_, kid := header(t, tok)

	pol.Algorithms = []string{keys.RS256}
	m, err := keys.NewManager(f.st, pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	f.sync()
	if _, ok := f.jwks()[kid]; !ok {
		t.Fatal("the dropped algorithm's key left the key set at once: its tokens still in flight would fail")
	}
	if _, err := f.verifier().Verify(t.Context(), tok); err != nil {
		t.Fatalf("a token of the dropped algorithm, within the retention: %v", err)
	}
	f.now = f.now.Add(keys.DefaultRetention + time.Minute)
	f.sync()
	if _, ok := f.jwks()[kid]; ok {
		t.Fatal("the dropped algorithm's key is still published after the retention")
	}
	if n := len(f.jwks()); n != 1 {
		t.Fatalf("%d keys published, want the RS256 key alone", n)
	}
}
