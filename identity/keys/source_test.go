package keys_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// TestDeclaredKeyAcrossRotations: while the ES256 and EdDSA keys rotate
// and the manager reloads its keys from the store, in parallel, every
// lookup of a published kid gives a key with the algorithm of that same
// key (a P-256 key with ES256, an Ed25519 key with EdDSA, an RSA key with
// RS256), and tokens signed before the rotations keep verifying. Under
// -race.
func TestDeclaredKeyAcrossRotations(t *testing.T) {
	f := newManagerFixture(t, allAlgs())
	src, ok := f.m.Source(func() time.Time { return f.now }).(verify.DeclaredKeys)
	if !ok {
		t.Fatal("the manager's key source declares no algorithms")
	}
	v := f.verifier()
	tokens := []string{f.token(keys.RS256, "j-rs"), f.token(keys.ES256, "j-es"), f.token(keys.EdDSA, "j-ed")}

	var (
		wg        sync.WaitGroup
		rotations atomic.Int64
		done      = make(chan struct{})
	)
	wg.Go(func() {
		defer close(done)
		for i := range 20 {
			alg := []string{keys.ES256, keys.EdDSA}[i%2]
			if _, err := f.m.Rotate(t.Context(), alg, f.now, true); err != nil {
				t.Errorf("Rotate %s: %v", alg, err)
				return
			}
			if err := f.m.Sync(t.Context(), f.now); err != nil {
				t.Errorf("Sync: %v", err)
				return
			}
			rotations.Add(1)
		}
	})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				raw, err := f.m.JWKS(f.now)
				if err != nil {
					t.Errorf("JWKS: %v", err)
					return
				}
				var set keys.JWKS
				if err := json.Unmarshal(raw, &set); err != nil {
					t.Errorf("JWKS: %v", err)
					return
				}
				for _, j := range set.Keys {
					key, alg, err := src.DeclaredKey(t.Context(), j.Kid)
					if errors.Is(err, verify.ErrUnknownKey) {
						continue // removed since
					}
					if err != nil || alg != j.Alg || !fitsAlg(key, alg) {
						t.Errorf("DeclaredKey(%s) = %T, %q, %v; published with %q", j.Kid, key, alg, err, j.Alg)
						return
					}
				}
				for _, tok := range tokens {
					if _, err := v.Verify(t.Context(), tok); err != nil {
						t.Errorf("a token signed before the rotations: %v", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if rotations.Load() != 20 {
		t.Fatalf("%d rotations of 20", rotations.Load())
	}
}

// fitsAlg reports whether key is of the type alg signs with.
func fitsAlg(key any, alg string) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return alg == keys.RS256
	case *ecdsa.PublicKey:
		return alg == keys.ES256 && k.Curve == elliptic.P256()
	case ed25519.PublicKey:
		return alg == keys.EdDSA
	}
	return false
}
