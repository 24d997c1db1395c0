package integration

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"
)

// TestChromiumPasskey: a passkey in Chromium's virtual authenticator
// (CTAP2, internal, resident keys, user verification): registered on the
// account page after the password, then a usernameless sign-in with it
// from a fresh browser state gives two factors (amr hwk user mfa); an
// assertion with a bogus signature is refused on the login page, and so
// is a credential of one user presented as another's (demo's key under
// viewer's user handle). That part failed (the forged sign-in went
// through) when the user handle the authenticator sent was replaced by
// the credential owner's before go-webauthn checked it. What
// only a browser checks is checked here: the pages' script runs under
// their nonce, its base64url and ArrayBuffer conversions, and the origin
// and RP ID the browser puts in what it signs.
func TestChromiumPasskey(t *testing.T) {
	t.Parallel()
	ctx := chromium(t)
	g := StartGatehouse(t)
	rp := newRelyingParty(t)

	if err := chromedp.Do(ctx, chromedp.Navigate(g.Issuer+"/connect/account"), chromedp.WaitVisible(chromedp.ID("username"))); err != nil {
		t.Fatalf("Chromium, account page: %v", err)
	}
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	auth, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
		Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol: webauthn.AuthenticatorProtocolCtap2, Transport: webauthn.AuthenticatorTransportInternal,
			HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
		},
	})
	if err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	authID := auth.AuthenticatorID

	// Register: the account page's login, the password again, the
	// browser's ceremony.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("username"), "demo"),
		chromedp.SendKeys(chromedp.ID("password"), "demo"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("passkey-new-name")),
		chromedp.SendKeys(chromedp.ID("passkey-new-name"), "Chromium"),
		chromedp.SendKeys(chromedp.ID("password-passkey"), "demo"),
		chromedp.Click(chromedp.CSS(`button[value=passkey-begin]`)),
		chromedp.WaitVisible(chromedp.ID("passkey-create")),
		chromedp.Click(chromedp.ID("passkey-create")),
		chromedp.WaitVisible(chromedp.ID("passkeys")),
	)
	if err != nil {
		status, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("Chromium, registering a passkey: %v (page: %q)", err, status)
	}
	list, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("passkeys")))
	if err != nil {
		t.Fatal(err)
	}
	notice, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("account-notice")))
	if err != nil || !strings.Contains(notice, "added") {
		t.Fatalf("after the registration: notice %q, %v (list %q)", notice, err, list)
	}

	// A fresh browser state: no session, the passkey still in the
	// authenticator.
	if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatalf("clearing cookies: %v", err)
	}
	cfg := demoAppConfig(t, g)
	cfg.Endpoint.AuthURL = g.Issuer + "/connect/authorize"
	cfg.RedirectURL = rp.url
	cfg.Scopes = []string{"openid", "profile"}
	verifier := oauth2.GenerateVerifier()

	// A bogus signature is refused on the login page.
	bogus := true
	if _, err := chromedp.Call(ctx, webauthn.SetResponseOverrideBits, webauthn.SetResponseOverrideBitsParams{
		AuthenticatorID: authID, IsBogusSignature: &bogus}); err != nil {
		t.Fatalf("WebAuthn.setResponseOverrideBits: %v", err)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(cfg.AuthCodeURL("bogus", oauth2.S256ChallengeOption(verifier))),
		chromedp.WaitVisible(chromedp.ID("passkey-signin")),
		chromedp.Click(chromedp.ID("passkey-signin")),
		chromedp.WaitVisible(chromedp.ID("login-error")),
	)
	if err != nil {
		t.Fatalf("Chromium, a bogus signature: %v", err)
	}
	if _, err := chromedp.Call(ctx, webauthn.SetResponseOverrideBits, webauthn.SetResponseOverrideBitsParams{
		AuthenticatorID: authID}); err != nil {
		t.Fatalf("WebAuthn.setResponseOverrideBits: %v", err)
	}

	err = chromedp.Do(ctx,
		chromedp.Navigate(cfg.AuthCodeURL("passkey", oauth2.S256ChallengeOption(verifier))),
		chromedp.WaitVisible(chromedp.ID("passkey-signin")),
		chromedp.Click(chromedp.ID("passkey-signin")),
		chromedp.WaitVisible(chromedp.ID("done")),
	)
	if err != nil {
		t.Fatalf("Chromium, signing in with the passkey: %v", err)
	}
	var v url.Values
	select {
	case v = <-rp.got:
	case <-ctx.Done():
		t.Fatal("the relying party got no callback")
	}
	if v.Get("state") != "passkey" || v.Get("code") == "" {
		t.Fatalf("callback: %v", v)
	}
	g.AddSecret(v.Get("code"))
	tok, err := cfg.Exchange(clientContext(t, g), v.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	idToken, _ := tok.Extra("id_token").(string)
	g.AddSecret(tok.AccessToken, idToken)
	parts := strings.Split(idToken, ".")
	if len(parts) != 3 {
		t.Fatal("no ID token")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Sub string   `json:"sub"`
		ACR string   `json:"acr"`
		AMR []string `json:"amr"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	if claims.Sub != subjectOf(t, "demo") || claims.ACR != "https://refeds.org/profile/mfa" ||
		!slices.Equal(claims.AMR, []string{"hwk", "user", "mfa"}) {
		t.Errorf("ID token: sub %q acr %q amr %v", claims.Sub, claims.ACR, claims.AMR)
	}

	// A credential of another user: viewer registers a passkey too; then
	// an authenticator holding demo's key under viewer's user handle
	// signs in (a credential claimed for another user than its own) and
	// is refused.
	if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatalf("clearing cookies: %v", err)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(g.Issuer+"/connect/account"),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "viewer"),
		chromedp.SendKeys(chromedp.ID("password"), "viewer"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("passkey-new-name")),
		chromedp.SendKeys(chromedp.ID("passkey-new-name"), "Viewer's"),
		chromedp.SendKeys(chromedp.ID("password-passkey"), "viewer"),
		chromedp.Click(chromedp.CSS(`button[value=passkey-begin]`)),
		chromedp.WaitVisible(chromedp.ID("passkey-create")),
		chromedp.Click(chromedp.ID("passkey-create")),
		chromedp.WaitVisible(chromedp.ID("passkeys")),
	)
	if err != nil {
		t.Fatalf("Chromium, viewer registering a passkey: %v", err)
	}
	creds, err := chromedp.Call(ctx, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: authID})
	if err != nil || len(creds.Credentials) != 2 {
		t.Fatalf("WebAuthn.getCredentials: %d, %v", len(creds.Credentials), err)
	}
	demo, viewer := creds.Credentials[0], creds.Credentials[1]
	if viewer.UserName != "viewer" {
		demo, viewer = viewer, demo
	}
	if demo.UserName != "demo" || viewer.UserName != "viewer" {
		t.Fatalf("the authenticator's credentials: %q and %q", demo.UserName, viewer.UserName)
	}
	if _, err := chromedp.Call(ctx, webauthn.RemoveVirtualAuthenticator, webauthn.RemoveVirtualAuthenticatorParams{
		AuthenticatorID: authID}); err != nil {
		t.Fatalf("WebAuthn.removeVirtualAuthenticator: %v", err)
	}
	forged, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
		Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol: webauthn.AuthenticatorProtocolCtap2, Transport: webauthn.AuthenticatorTransportInternal,
			HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
		},
	})
	if err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	if _, err := chromedp.Call(ctx, webauthn.AddCredential, webauthn.AddCredentialParams{
		AuthenticatorID: forged.AuthenticatorID,
		Credential: &webauthn.Credential{
			CredentialID: demo.CredentialID, IsResidentCredential: true, RpID: demo.RpID, PrivateKey: demo.PrivateKey,
			UserHandle: viewer.UserHandle, SignCount: demo.SignCount + 10, UserName: "viewer",
		},
	}); err != nil {
		t.Fatalf("WebAuthn.addCredential: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatalf("clearing cookies: %v", err)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(cfg.AuthCodeURL("forged", oauth2.S256ChallengeOption(verifier))),
		chromedp.WaitVisible(chromedp.ID("passkey-signin")),
		chromedp.Click(chromedp.ID("passkey-signin")),
		chromedp.WaitVisible(chromedp.ID("login-error")),
	)
	if err != nil {
		t.Fatalf("Chromium, demo's passkey under viewer's user handle: %v", err)
	}
	select {
	case v := <-rp.got:
		t.Fatalf("the relying party got a callback: %v", v)
	default:
	}
}
