package integration

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"
)

// TestRemoteJWKS runs two gatehouses: A, the demo identity server, and B, a
// guard in remote-only mode (no issuer of its own) that protects a route
// with gatehouse_auth, checking A's tokens against A's JWKS over HTTP. It
// rotates A's signing key with the CLI, then stops A.
func TestRemoteJWKS(t *testing.T) {
	t.Parallel()
	a := StartGatehouseWith(t, Options{Config: issuerConfig(t)})
	up := newUpstream(t)
	b := StartGatehouseWith(t, Options{
		Config:      guardConfig(t, a.Issuer, a.JWKSURI(t), up.URL),
		ReadyPath:   "/",
		ReadyStatus: http.StatusUnauthorized, // gatehouse_auth answers: B serves
	})
	// Each log must hold none of the tokens, secrets and passwords of either.
	a.AlsoCheckSecretsOf(b)
	b.AlsoCheckSecretsOf(a)

	demo := subjectOf(t, "demo")
	old := a.PasswordGrant(t, "demo", "demo")
	oldUnseen := a.PasswordGrant(t, "demo", "demo") // shown to B only once A is down
	oldKid := kidOf(t, old.AccessToken)

	resp, body := a.PostToken(t, url.Values{
		"grant_type": {"password"}, "username": {"demo"}, "password": {"demo"},
		"client_id": {publicClient}, "scope": {"openid"},
	}, "", "")
	openidOnly := decodeToken(t, resp, body)
	resp, body = a.PostToken(t, url.Values{"grant_type": {"client_credentials"}}, serviceClient, serviceSecret)
	service := decodeToken(t, resp, body)

	spoofed := http.Header{"X-User-Id": {"spoofed-user"}, "X_User_Id": {"spoofed-user"}, "x-user-id": {"spoofed-user"}}
	for _, tc := range []struct {
		name      string
		token     string
		status    int
		challenge string // WWW-Authenticate, exactly, or "" for any...
		errorCode string // ...holding this error code
		userID    string // X-User-Id the upstream must see on success
	}{
		{name: "token of A", token: old.AccessToken, status: http.StatusOK, userID: demo},
		{name: "client credentials token of A", token: service.AccessToken, status: http.StatusOK, userID: serviceClient},
		{name: "no token", status: http.StatusUnauthorized, challenge: `Bearer realm="gatehouse"`},
		{name: "token without Service/Market", token: openidOnly.AccessToken, status: http.StatusForbidden, errorCode: "insufficient_scope"},
		{name: "tampered claims", token: tamperClaims(t, old.AccessToken, "sub", subjectOf(t, "trader")), status: http.StatusUnauthorized, errorCode: "invalid_token"},
		{name: "tampered signature", token: tamperSignature(t, old.AccessToken), status: http.StatusUnauthorized, errorCode: "invalid_token"},
		{name: "ID token", token: old.IDToken, status: http.StatusUnauthorized, errorCode: "invalid_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.token == "" && tc.status == http.StatusOK {
				t.Fatal("the grant returned no token")
			}
			checkGuard(t, b, up, tc.token, spoofed, tc.status, tc.challenge, tc.errorCode, tc.userID)
		})
	}

	// A key rotation on A, done by the CLI on A's store: A picks it up
	// within its check_interval (1s), B on the first token of the new key.
	rotateKeys(t, a)
	kids := waitForKids(t, a, 2)
	if !slices.Contains(kids, oldKid) {
		t.Fatalf("after the rotation A's JWKS has kids %q, without the old %q", kids, oldKid)
	}
	rotated := a.PasswordGrant(t, "demo", "demo")
	newKid := kidOf(t, rotated.AccessToken)
	if newKid == oldKid {
		t.Fatalf("after `keys rotate --immediately` A still signs with kid %q", oldKid)
	}
	if !slices.Contains(kids, newKid) {
		t.Fatalf("A signs with kid %q, which its JWKS (%q) does not publish", newKid, kids)
	}
	took := waitForGuard(t, b, rotated.AccessToken)
	t.Logf("B accepted a token of the new key %s after %v", newKid, took.Round(time.Millisecond))
	checkGuard(t, b, up, old.AccessToken, spoofed, http.StatusOK, "", "", demo)
	newUnseen := a.PasswordGrant(t, "demo", "demo") // shown to B only once A is down
	if kidOf(t, newUnseen.AccessToken) != newKid {
		t.Fatalf("A's signing key changed again: %q", kidOf(t, newUnseen.AccessToken))
	}

	// A down: B keeps its last good key set, even after a refetch (for an
	// unknown kid) fails, and its cache of verified tokens; so tokens it
	// has seen and tokens it has not still pass.
	a.Stop()
	unknownKid := tamperHeader(t, newUnseen.AccessToken, "kid", "integration-unknown-kid")
	took = waitForFetchFailure(t, b, up, unknownKid)
	t.Logf("B tried to refetch A's JWKS and failed after %v", took.Round(time.Millisecond))
	for _, tc := range []struct{ name, token string }{
		{"old key, seen", old.AccessToken},
		{"new key, seen", rotated.AccessToken},
		{"old key, unseen", oldUnseen.AccessToken},
		{"new key, unseen", newUnseen.AccessToken},
	} {
		t.Run("issuer down/"+tc.name, func(t *testing.T) {
			checkGuard(t, b, up, tc.token, spoofed, http.StatusOK, "", "", demo)
		})
	}
	t.Run("issuer down/tampered", func(t *testing.T) {
		forged := tamperClaims(t, newUnseen.AccessToken, "scope", "Service/Market Service/Trading")
		checkGuard(t, b, up, forged, spoofed, http.StatusUnauthorized, "", "invalid_token", "")
	})

	t.Run("metrics", func(t *testing.T) {
		metrics := scrapeMetrics(t, b)
		if n := metricValue(metrics, `gatehouse_jwks_fetches_total{result="success"}`); n < 2 {
			t.Errorf("gatehouse_jwks_fetches_total{result=\"success\"} = %v, want >= 2 (start, new kid)", n)
		}
		if n := metricValue(metrics, `gatehouse_jwks_fetches_total{result="failure"}`); n < 1 {
			t.Errorf("gatehouse_jwks_fetches_total{result=\"failure\"} = %v, want >= 1 (A down)", n)
		}
		if n := metricValue(metrics, `gatehouse_verifications_total{outcome="verified"}`); n < 6 {
			t.Errorf("gatehouse_verifications_total{outcome=\"verified\"} = %v, want >= 6", n)
		}
		for _, outcome := range []string{"cache_hit", "bad_signature", "unknown_key"} {
			if n := metricValue(metrics, `gatehouse_verifications_total{outcome="`+outcome+`"}`); n < 1 {
				t.Errorf("gatehouse_verifications_total{outcome=%q} = %v, want >= 1", outcome, n)
			}
		}
		if t.Failed() {
			t.Logf("B's metrics:\n%s", metrics)
		}
		for _, leak := range findLeaks(metrics, b.Secrets(), demoPasswords) {
			t.Errorf("B's metrics leak %s", leak)
		}
	})
}
