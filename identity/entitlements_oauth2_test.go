package identity

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/oauth"
)

// handlerTransport answers a client's requests with h, in memory.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.RemoteAddr = "192.0.2.7:4711"
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// extraPairs reads the authorization_details a token response returned
// to golang.org/x/oauth2 (Token.Extra).
func extraPairs(t *testing.T, tok *oauth2.Token) string {
	t.Helper()
	v := tok.Extra("authorization_details")
	if v == nil {
		return ""
	}
	s, err := entitle.FromClaim(v)
	if err != nil {
		t.Fatalf("authorization_details %v: %v", v, err)
	}
	return s.String()
}

// The real third-party clients: golang.org/x/oauth2 asks for fewer pairs
// at the authorization endpoint (SetAuthURLParam), reads them from the
// token response (Extra) and keeps them through its own refresh;
// coreos/go-oidc verifies the access token against the published keys
// and reads its authorization_details claim, and reads them from
// userinfo; a pair the user does not hold comes back as the
// invalid_authorization_details error redirect, and to the
// clientcredentials package as a RetrieveError. It failed when the
// authorization endpoint dropped the request's authorization_details
// (the code held all three pairs).
func TestEntitlementsThirdPartyClients(t *testing.T) {
	f := newFixture(t, withBrowserClients, withEntitledService)
	f.entitle("demo", "ASX:quotes ASX:depth NZX:quotes")
	client := &http.Client{Transport: handlerTransport{f.srv}}
	ctx := oidc.ClientContext(context.WithValue(t.Context(), oauth2.HTTPClient, client), client)
	conf := oauth2.Config{
		ClientID:    "spa",
		Endpoint:    oauth2.Endpoint{AuthURL: testIssuer + PathAuthorize, TokenURL: testIssuer + PathToken, AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: spaRedirect,
		Scopes:      []string{"openid", "profile", "offline_access", "Service/Market"},
	}
	authorize := func(details string) url.Values {
		t.Helper()
		u, err := url.Parse(conf.AuthCodeURL("st-1", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", "n-1"),
			oauth2.SetAuthURLParam("authorization_details", details)))
		if err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, f)
		return b.login(b.authorize(u.Query()), "demo", "demo-pw").result(t, false)
	}

	res := authorize(`[{"type":"market_data","venue":"NZX","feeds":["depth"]}]`)
	if res.Get("error") != oauth.ErrInvalidAuthorizationDetails || res.Get("code") != "" {
		t.Fatalf("a pair not held at the authorization endpoint: %v", res)
	}
	res = authorize(`[{"type":"market_data","venue":"ASX","feeds":["quotes"]}]`)
	tok, err := conf.Exchange(ctx, res.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if got := extraPairs(t, tok); got != "ASX:quotes" {
		t.Fatalf("the code's token holds %q, want ASX:quotes", got)
	}

	provider, err := oidc.NewProvider(ctx, testIssuer)
	if err != nil {
		t.Fatal(err)
	}
	at, err := provider.Verifier(&oidc.Config{SkipClientIDCheck: true, Now: f.clock.Now}).Verify(ctx, tok.AccessToken)
	if err != nil {
		t.Fatalf("go-oidc refused the access token: %v", err)
	}
	var claims struct {
		Details json.RawMessage `json:"authorization_details"`
	}
	if err := at.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if s, err := entitle.ParseClaim(claims.Details); err != nil || s.String() != "ASX:quotes" {
		t.Errorf("go-oidc reads the claim as %v, %v", s, err)
	}
	ui, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatal(err)
	}
	claims.Details = nil
	if err := ui.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if s, err := entitle.ParseClaim(claims.Details); err != nil || s.String() != "ASX:quotes" {
		t.Errorf("userinfo through go-oidc says %v, %v", s, err)
	}

	f.clock.Add(2 * time.Hour) // the access token expired: the token source refreshes
	stale := *tok
	stale.Expiry = f.clock.Now().Add(-time.Minute)
	next, err := conf.TokenSource(ctx, &stale).Token()
	if err != nil {
		t.Fatal(err)
	}
	if next.AccessToken == tok.AccessToken || extraPairs(t, next) != "ASX:quotes" {
		t.Errorf("the refreshed token holds %q", extraPairs(t, next))
	}

	cc := clientcredentials.Config{ClientID: "svc", ClientSecret: "svc-secret", TokenURL: testIssuer + PathToken,
		AuthStyle: oauth2.AuthStyleInHeader}
	svcTok, err := cc.Token(ctx)
	if err != nil || extraPairs(t, svcTok) != "ASX:quotes" {
		t.Fatalf("client_credentials: %v, %v", svcTok, err)
	}
	cc.EndpointParams = url.Values{"authorization_details": {`[{"type":"market_data","venue":"NZX","feeds":["quotes"]}]`}}
	_, err = cc.Token(ctx)
	re, ok := errors.AsType[*oauth2.RetrieveError](err)
	if !ok || re.ErrorCode != oauth.ErrInvalidAuthorizationDetails || re.Response.StatusCode != http.StatusBadRequest {
		t.Errorf("client_credentials asking for a pair not held: %v", err)
	}
}
