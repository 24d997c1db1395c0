package integration

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// algsConfig is the demo keeping signing keys of every algorithm, with a
// public client per algorithm whose access and ID tokens use it.
func algsConfig(t testing.TB) string {
	t.Helper()
	clients := ""
	for _, alg := range []string{"ES256", "EdDSA"} {
		clients += "client demo-" + strings.ToLower(alg) + " {\n" +
			"\t\t\tpublic\n\t\t\tgrant_types password refresh_token\n" +
			"\t\t\tscopes openid profile offline_access Service/Market\n" +
			"\t\t\taccess_token_signing_alg " + alg + "\n" +
			"\t\t\tid_token_signed_response_alg " + alg + "\n\t\t}\n\n\t\t"
	}
	return demoVariant(t, "signing-algs",
		configEdit{anchor: anchorGatehouse, insert: "\t\tsigning_keys {\n\t\t\talgorithms RS256 ES256 EdDSA\n\t\t}\n"},
		configEdit{anchor: anchorServiceClient, insert: clients, before: true})
}

// headerAlg is the "alg" of a JWS.
func headerAlg(t testing.TB, tok string) string {
	t.Helper()
	head, _, _ := strings.Cut(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(head)
	var h struct{ Alg string }
	if err != nil || json.Unmarshal(raw, &h) != nil {
		t.Fatalf("bad JOSE header %q", head)
	}
	return h.Alg
}

// x/oauth2 and go-oidc, as a Go relying party uses them, against ES256 and
// EdDSA clients: discovery lists the algorithms, the password grant
// through x/oauth2 returns an ID token of the client's algorithm that
// go-oidc verifies with the published JWKS (at_hash included: SHA-512 for
// EdDSA), the access token verifies with the same key set and is accepted
// by userinfo, and the ID token verifies for no other algorithm's client.
func TestOIDCIDTokenAlgorithms(t *testing.T) {
	t.Parallel()
	g := StartGatehouseWith(t, Options{Config: algsConfig(t)})
	ctx := oidc.ClientContext(clientContext(t, g), g.Client) // go-oidc's and x/oauth2's requests through g.Client
	provider, err := oidc.NewProvider(ctx, g.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	var disc struct {
		Algs []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := provider.Claims(&disc); err != nil || !slices.Equal(disc.Algs, []string{"RS256", "ES256", "EdDSA"}) {
		t.Fatalf("id_token_signing_alg_values_supported %v, %v", disc.Algs, err)
	}
	keys := oidc.NewRemoteKeySet(ctx, g.JWKSURI(t))
	for _, alg := range []string{"ES256", "EdDSA"} {
		t.Run(alg, func(t *testing.T) {
			clientID := "demo-" + strings.ToLower(alg)
			cfg := oauth2.Config{ClientID: clientID, Endpoint: provider.Endpoint(), Scopes: []string{"openid", "profile", "Service/Market"}}
			tok, err := cfg.PasswordCredentialsToken(ctx, "demo", "demo")
			if err != nil {
				t.Fatalf("PasswordCredentialsToken: %v", err)
			}
			raw, _ := tok.Extra("id_token").(string)
			if raw == "" || headerAlg(t, raw) != alg || headerAlg(t, tok.AccessToken) != alg {
				t.Fatalf("want an ID token and an access token signed with %s", alg)
			}
			verifier := provider.Verifier(&oidc.Config{ClientID: clientID, SupportedSigningAlgs: []string{alg}})
			idToken, err := verifier.Verify(ctx, raw)
			if err != nil {
				t.Fatalf("go-oidc refused the %s ID token: %v", alg, err)
			}
			if idToken.Subject != subjectOf(t, "demo") {
				t.Errorf("sub %q", idToken.Subject)
			}
			if err := idToken.VerifyAccessToken(tok.AccessToken); err != nil {
				t.Errorf("at_hash: %v", err)
			}
			if _, err := keys.VerifySignature(ctx, tok.AccessToken); err != nil {
				t.Errorf("the %s access token does not verify with the JWKS: %v", alg, err)
			}
			if resp, body := g.Userinfo(t, tok.AccessToken); resp.StatusCode != http.StatusOK {
				t.Errorf("userinfo refused the %s access token: %d %s", alg, resp.StatusCode, body)
			}
			other := map[string]string{"ES256": "EdDSA", "EdDSA": "ES256"}[alg]
			if _, err := provider.Verifier(&oidc.Config{ClientID: clientID, SupportedSigningAlgs: []string{other}}).Verify(ctx, raw); err == nil {
				t.Errorf("the %s ID token verified for a relying party accepting %s only", alg, other)
			}
		})
	}
}

// TestNodeIDTokenAlgorithms runs node/algs.test.mjs against the same
// config: openid-client v6 takes ES256 and EdDSA ID tokens from clients
// registered for them (and refuses them when expecting RS256), and jose
// verifies them and the access tokens with the published JWKS.
func TestNodeIDTokenAlgorithms(t *testing.T) {
	t.Parallel()
	runNodeScript(t, StartGatehouseWith(t, Options{Config: algsConfig(t)}), "algs.test.mjs")
}

// TestChromiumOIDCClientTSES256: the original web client's flow
// (oidc-client-ts's signinRedirect, the login page,
// signinRedirectCallback, in Chromium) with a client whose ID tokens are
// ES256: the sign-in completes with the user's subject and nonce, and the
// ID token it kept is ES256. (oidc-client-ts reads the ID token's claims
// and leaves its signature to the code exchange's TLS, as OpenID Connect
// Core §3.1.3.7 allows; go-oidc and jose verify ES256 signatures above.)
func TestChromiumOIDCClientTSES256(t *testing.T) {
	t.Parallel()
	ctx := chromium(t)
	rp := listenSPA(t, "127.0.0.1")
	g := StartGatehouseWith(t, Options{Config: demoVariant(t, "spa-es256",
		configEdit{anchor: anchorGatehouse, insert: "\t\tsigning_keys {\n\t\t\talgorithms RS256 ES256\n\t\t}\n"},
		configEdit{anchor: anchorServiceClient, insert: spaClientWith("\t\t\tid_token_signed_response_alg ES256\n", rp.origin), before: true})})
	rp.serve(t, g.Issuer)
	err := chromedp.Do(ctx,
		chromedp.Navigate(rp.origin+"/start"),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "demo"),
		chromedp.SendKeys(chromedp.ID("password"), "demo"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("done")),
	)
	if err != nil {
		t.Fatalf("signinRedirect: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("done")))
	if err != nil {
		t.Fatal(err)
	}
	idToken, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.parse(sessionStorage.getItem("oidc.user:`+g.Issuer+`:spa-test")).id_token`))
	if err != nil {
		t.Fatalf("reading the ID token oidc-client-ts kept: %v", err)
	}
	if !strings.HasPrefix(text, "ok "+subjectOf(t, "demo")+" ") {
		t.Fatalf("signinRedirectCallback: %q", text)
	}
	g.AddSecret(idToken)
	if alg := headerAlg(t, idToken); alg != "ES256" {
		t.Fatalf("the ID token oidc-client-ts kept is %s, want ES256", alg)
	}
}
