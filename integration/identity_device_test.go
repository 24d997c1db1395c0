package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// deviceConfig is demo-app as golang.org/x/oauth2 sees it for the device
// flow (RFC 8628).
func deviceConfig(t testing.TB, g *Gatehouse) *oauth2.Config {
	cfg := demoAppConfig(t, g)
	cfg.Endpoint.DeviceAuthURL = g.Issuer + "/connect/deviceauthorization"
	cfg.Scopes = []string{"openid", "offline_access", "Service/Market"}
	return cfg
}

// answerDevice has a browser log in as user on the verification page of
// verificationURIComplete and answer decision; it returns the final page.
func answerDevice(t testing.TB, g *Gatehouse, verificationURIComplete, user, password, decision string) page {
	t.Helper()
	b := newBrowser(t, g)
	login := b.get(verificationURIComplete)
	if login.status != http.StatusOK || !strings.Contains(login.body, `action="/connect/device"`) {
		t.Fatalf("verification page without a session: %d %.300s", login.status, login.body)
	}
	v := login.fields()
	v.Set("username", user)
	v.Set("password", password)
	back := b.post("/connect/device", v)
	if back.status != http.StatusSeeOther || back.location == nil {
		t.Fatalf("device login: %d %.300s", back.status, back.body)
	}
	confirm := b.get(g.Issuer + back.location.String())
	if confirm.status != http.StatusOK || !strings.Contains(confirm.body, `value="decide"`) || !strings.Contains(confirm.body, "Demo App") {
		t.Fatalf("confirmation page: %d %.500s", confirm.status, confirm.body)
	}
	v = confirm.fields()
	v.Set("decision", decision)
	return b.post("/connect/device", v)
}

// TestDeviceFlowGo: golang.org/x/oauth2's DeviceAuth and DeviceAccessToken
// against the real binary; a browser approves on the verification page,
// the tokens come once, and the device code is refused after that.
func TestDeviceFlowGo(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	cfg := deviceConfig(t, g)
	ctx := clientContext(t, g)
	da, err := cfg.DeviceAuth(ctx)
	if err != nil {
		t.Fatalf("DeviceAuth: %v", err)
	}
	if da.UserCode == "" || da.VerificationURI != g.Issuer+"/connect/device" || da.Interval != 5 ||
		!strings.HasPrefix(da.VerificationURIComplete, da.VerificationURI+"?user_code=") {
		t.Fatalf("device authorization: %+v", da)
	}
	type result struct {
		tok *oauth2.Token
		err error
	}
	got := make(chan result, 1)
	go func() {
		tok, err := cfg.DeviceAccessToken(ctx, da)
		got <- result{tok, err}
	}()
	done := answerDevice(t, g, da.VerificationURIComplete, "demo", "demo", "allow")
	if done.status != http.StatusOK || !strings.Contains(done.body, "Device connected") {
		t.Fatalf("after Allow: %d %.300s", done.status, done.body)
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(time.Minute):
		t.Fatal("DeviceAccessToken did not return")
	}
	if r.err != nil {
		t.Fatalf("DeviceAccessToken: %v", r.err)
	}
	if r.tok.AccessToken == "" || r.tok.RefreshToken == "" || r.tok.Extra("id_token") == nil ||
		r.tok.Extra("scope") != "openid offline_access Service/Market" {
		t.Fatalf("token: access %t refresh %t scope %v", r.tok.AccessToken != "", r.tok.RefreshToken != "", r.tok.Extra("scope"))
	}
	// The access token is the user's at userinfo.
	resp, body := g.Userinfo(t, r.tok.AccessToken)
	wantStatus(t, "userinfo", resp, body, http.StatusOK)
	if !strings.Contains(string(body), `"sub":"`+subjectOf(t, "demo")+`"`) {
		t.Errorf("userinfo: %s", body)
	}
	// The device code is spent: another exchange, after the interval, is
	// invalid_grant.
	time.Sleep(5 * time.Second)
	resp, body = g.PostToken(t, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"},
		"client_id": {publicClient}, "device_code": {da.DeviceCode}}, "", "")
	if e := decodeError(t, resp, body); resp.StatusCode != http.StatusBadRequest || e.Error != "invalid_grant" {
		t.Errorf("second exchange: %d %s", resp.StatusCode, body)
	}
	g.CheckLogs(t)
}

// TestDeviceFlowDeniedGo: a denial reaches DeviceAccessToken as
// access_denied.
func TestDeviceFlowDeniedGo(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	cfg := deviceConfig(t, g)
	ctx, cancel := context.WithTimeout(clientContext(t, g), time.Minute)
	defer cancel()
	da, err := cfg.DeviceAuth(ctx)
	if err != nil {
		t.Fatalf("DeviceAuth: %v", err)
	}
	done := answerDevice(t, g, da.VerificationURIComplete, "demo", "demo", "deny")
	if done.status != http.StatusOK || !strings.Contains(done.body, "Request denied") {
		t.Fatalf("after Deny: %d %.300s", done.status, done.body)
	}
	_, err = cfg.DeviceAccessToken(ctx, da)
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); !ok || re.ErrorCode != "access_denied" {
		t.Fatalf("DeviceAccessToken after a denial: %v", err)
	}
	g.CheckLogs(t)
}

// slowDownCounter counts the token endpoint's slow_down answers.
type slowDownCounter struct {
	base http.RoundTripper
	mu   sync.Mutex
	slow int
	all  int
}

func (c *slowDownCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/connect/token") {
		return resp, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	c.mu.Lock()
	c.all++
	if strings.Contains(string(body), `"slow_down"`) {
		c.slow++
	}
	c.mu.Unlock()
	return resp, nil
}

// TestDevicePollingCompliantClient: golang.org/x/oauth2's real poller,
// which waits the interval between polls and so arrives some milliseconds
// early by the server's clock, is never told slow_down, and gets its
// token within an interval of the approval; a poller at half the
// interval is.
// It failed when: x/oauth2's polls got slow_down three times, growing the
// interval from 5 to 20 s, and the token came 30 s after the approval.
func TestDevicePollingCompliantClient(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	cfg := deviceConfig(t, g)
	counter := &slowDownCounter{base: g.Client.Transport}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: counter, Timeout: requestTimeout})
	da, err := cfg.DeviceAuth(ctx)
	if err != nil {
		t.Fatalf("DeviceAuth: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := cfg.DeviceAccessToken(ctx, da)
		got <- err
	}()
	time.Sleep(16 * time.Second) // three polls or so
	answerDevice(t, g, da.VerificationURIComplete, "demo", "demo", "allow")
	approved := time.Now()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("DeviceAccessToken: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("DeviceAccessToken did not return")
	}
	counter.mu.Lock()
	slow, all := counter.slow, counter.all
	counter.mu.Unlock()
	if slow != 0 {
		t.Errorf("x/oauth2's poller got slow_down %d times in %d polls", slow, all)
	}
	if d := time.Since(approved); d > 7*time.Second {
		t.Errorf("the token came %v after the approval, the interval is 5 s", d)
	}

	// Half the interval is too fast.
	da, err = cfg.DeviceAuth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	poll := func() string {
		resp, body := g.PostToken(t, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"},
			"client_id": {publicClient}, "device_code": {da.DeviceCode}}, "", "")
		return decodeError(t, resp, body).Error
	}
	if e := poll(); e != "authorization_pending" {
		t.Fatalf("first poll: %s", e)
	}
	time.Sleep(2500 * time.Millisecond)
	if e := poll(); e != "slow_down" {
		t.Errorf("a poll at half the interval: %s, want slow_down", e)
	}
}
