package verify_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

// TestRemoteKeyAndAlgOfOneSet: a remote key set whose kid "k" names, from
// one fetch to the next, key one declared PS256 and key two declared
// RS256, refreshed every millisecond while lookups and verifications run
// in parallel: each lookup gives a key with its own set's alg, never one
// set's key with the other's alg, and no token verifies, neither RS256
// signed by key one nor PS256 signed by key two (each fits a key and an
// alg of two different sets, and would pass a mixed pair). Under -race.
func TestRemoteKeyAndAlgOfOneSet(t *testing.T) {
	is := verifytest.NewIssuer(t, issuerURL, time.Now)
	one := is.Private
	two, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding
	set := func(k *rsa.PrivateKey, alg string) []byte {
		body, err := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "RSA", "use": "sig", "kid": "k",
			"alg": alg, "n": b64.EncodeToString(k.N.Bytes()), "e": "AQAB"}}})
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	bodies := [2][]byte{set(one, "PS256"), set(two, "RS256")}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(bodies[hits.Add(1)%2])
	}))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(t.Context())
	var running sync.WaitGroup // the key set's refreshes
	t.Cleanup(running.Wait)
	t.Cleanup(cancel)
	keys, err := verify.NewRemoteKeySet(ctx, verify.RemoteConfig{URL: srv.URL, Refresh: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	running.Go(func() { keys.Run(ctx) })
	v, err := verify.New(ctx, verify.Config{Issuer: issuerURL, Keys: keys, Algorithms: []string{"RS256", "PS256"}, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(alg string, k *rsa.PrivateKey) string {
		h, _ := json.Marshal(map[string]any{"alg": alg, "typ": "at+jwt", "kid": "k"})
		c, _ := json.Marshal(is.Claims("alice"))
		input := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
		sig, err := jwt.GetSigningMethod(alg).Sign(input, k)
		if err != nil {
			t.Fatal(err)
		}
		return input + "." + b64.EncodeToString(sig)
	}
	tokens := []string{sign("RS256", one), sign("PS256", two)}

	pairs := map[string]crypto.PublicKey{"PS256": &one.PublicKey, "RS256": &two.PublicKey}
	var lookups, swapsSeen atomic.Int64
	// A second at least, and until a few swaps were seen (a loaded
	// machine fetches slowly), within 20 s.
	start := time.Now()
	going := func() bool {
		d := time.Since(start)
		return d < time.Second || swapsSeen.Load() < 4 && d < 20*time.Second
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			last := ""
			for i := 0; going(); i++ {
				if w%2 == 0 {
					key, alg, err := keys.DeclaredKey(ctx, "k")
					if err != nil {
						t.Errorf("DeclaredKey: %v", err)
						return
					}
					if want, ok := pairs[alg]; !ok || !verify.SameKey(key, want) {
						t.Errorf("DeclaredKey gave a key of one set with the alg %q of another", alg)
						return
					}
					if last != "" && alg != last {
						swapsSeen.Add(1)
					}
					last = alg
					lookups.Add(1)
					continue
				}
				if _, err := v.Verify(ctx, tokens[i%2]); err == nil {
					t.Errorf("token %d verified: a key paired with another set's alg", i%2)
					return
				} else if ve, ok := errors.AsType[*verify.Error](err); !ok ||
					(ve.Reason != verify.ReasonAlgorithm && ve.Reason != verify.ReasonSignature) {
					t.Errorf("token %d: %v, want an algorithm or signature refusal", i%2, err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d lookups, %d swaps seen, %d fetches", lookups.Load(), swapsSeen.Load(), hits.Load())
	if swapsSeen.Load() < 4 {
		t.Fatalf("too few swaps of the key set seen in %d lookups (%d fetches)", lookups.Load(), hits.Load())
	}
}
