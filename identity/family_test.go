package identity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/tokens"
)

// records counts what a purge a century on would remove: every family,
// legacy token, access-token record and revocation in the store.
func (f *fixture) records() int64 {
	f.t.Helper()
	n, err := f.st.DeleteExpired(context.Background(), f.clock.Now().AddDate(100, 0, 0))
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// A family costs the store the same after many rotations as after one:
// one family row, no row per token or per access token.
func TestFamilyStorageIsConstant(t *testing.T) {
	counts := map[int]int64{}
	for _, rotations := range []int{1, 40} {
		f := newFixture(t)
		rt := f.login("demo", "demo-pw").str("refresh_token")
		for range rotations {
			res := f.refresh("app", rt)
			if res.status != 200 {
				t.Fatal(res.raw)
			}
			rt = res.str("refresh_token")
		}
		if parts := strings.Split(rt, "~"); len(parts) != 4 || parts[1] == "" {
			t.Fatalf("refresh token %q does not name its family and generation", rt)
		}
		counts[rotations] = f.records()
	}
	if counts[1] != 1 || counts[40] != counts[1] {
		t.Fatalf("records after 1 and 40 rotations: %d and %d, want 1 each", counts[1], counts[40])
	}
}

// A token naming a family but with a forged secret is unknown: it neither
// refreshes nor revokes the family (knowing a family id, from an access
// token's fid, forges nothing).
func TestForgedFamilyToken(t *testing.T) {
	f := newFixture(t)
	rt := f.login("demo", "demo-pw").str("refresh_token")
	fam, _, _ := strings.Cut(rt, "~")
	parts := strings.Split(rt, "~")
	for _, forged := range []string{fam + "~1~forged~tag", fam + "~2~forged~" + parts[3], fam + "~0~x~y", fam + "~01~x~y",
		fam + "~1~" + strings.Repeat("A", 43) + "~" + parts[3], fam + "~1~" + parts[2] + "~" + strings.Repeat("A", 22), fam + "~1~" + parts[2]} {
		if res := f.refresh("app", forged); res.status != 400 || res.str("error") != "invalid_grant" {
			t.Fatalf("%q: %s", forged, res.raw)
		}
	}
	if res := f.refresh("app", rt); res.status != 200 {
		t.Fatalf("a forged token hurt the family: %s", res.raw)
	}
}

// An old generation's genuine token (not the previous one) is a replay: it
// revokes the family.
func TestOldGenerationRevokes(t *testing.T) {
	f := newFixture(t)
	first := f.login("demo", "demo-pw").str("refresh_token")
	rt := first
	for range 3 {
		rt = f.refresh("app", rt).str("refresh_token")
	}
	if res := f.refresh("app", first); res.status != 400 {
		t.Fatal(res.raw)
	}
	if res := f.refresh("app", rt); res.status != 400 {
		t.Fatalf("the family survived an old generation's replay: %s", res.raw)
	}
}

// A family made before constant storage (a row per token) refreshes once
// more: that rotation converts it, the grace window still holds for its
// legacy parent, and a later replay of the legacy token revokes it.
func TestLegacyFamilyConverts(t *testing.T) {
	f := newFixture(t)
	seeder, ok := f.st.(store.LegacySeeder)
	if !ok {
		t.Fatal("the SQLite store cannot seed legacy families")
	}
	now := f.clock.Now()
	legacy := "legacy-refresh-token-of-the-first-scheme"
	fam := store.RefreshFamily{ID: "legacy-fam", ClientID: "app", Subject: "sub-demo",
		Scopes: []string{"openid", "offline_access", "Service/Market"}, AuthTime: now, Created: now, ExpiresAt: now.Add(24 * time.Hour)}
	err := seeder.SeedLegacyFamily(t.Context(), fam,
		[]store.RefreshToken{{Hash: tokens.HashToken(legacy), IssuedAt: now, ExpiresAt: now.Add(time.Hour)}},
		[]store.IssuedAccessToken{{JTI: "legacy-jti", ExpiresAt: now.Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	res := f.refresh("app", legacy)
	if res.status != 200 || !strings.HasPrefix(res.str("refresh_token"), "legacy-fam~2~") || strings.Count(res.str("refresh_token"), "~") != 3 {
		t.Fatalf("legacy refresh: %s", res.raw)
	}
	successor := res.str("refresh_token")
	if again := f.refresh("app", legacy); again.status != 200 || again.str("refresh_token") != successor {
		t.Fatalf("grace window for the legacy parent: %s", again.raw)
	}
	f.clock.Add(10 * time.Second)
	if res := f.refresh("app", legacy); res.status != 400 {
		t.Fatal(res.raw)
	}
	if res := f.refresh("app", successor); res.status != 400 {
		t.Fatalf("the converted family survived the legacy token's replay: %s", res.raw)
	}
	revoked, err := f.st.AccessTokenRevoked(t.Context(), "legacy-jti", "", "", time.Time{})
	if err != nil || !revoked {
		t.Fatalf("the legacy family's recorded access token was not revoked: %v", err)
	}
}

// With a key encryption key the successor secret is sealed in the store,
// like the signing keys.
func TestRefreshSecretSealed(t *testing.T) {
	kek := bytes.Repeat([]byte{7}, 32)
	f := newFixture(t, func(c *Config) { c.Keys.EncryptionKey = kek })
	stored, err := f.st.Secret(t.Context(), tokens.RefreshSecretName, nil)
	if err != nil || !bytes.HasPrefix(stored, []byte("gatehouse-kek-v1:")) {
		t.Fatalf("successor secret stored in the clear: %v", err)
	}
	rt := f.login("demo", "demo-pw").str("refresh_token")
	f.restart()
	if res := f.refresh("app", rt); res.status != 200 {
		t.Fatalf("refresh after a restart with the sealed secret: %s", res.raw)
	}
}

// Ending a subject's sessions (a disabled user, a changed password)
// revokes its refresh families and every access token issued before, in
// introspection and in the verifier; a later login works.
func TestRevokeSubjectEndsSessions(t *testing.T) {
	f := newFixture(t)
	login := f.login("demo", "demo-pw")
	at, rt := login.str("access_token"), login.str("refresh_token")
	if res := f.userinfo("GET", at); res.status != 200 { // cached in the verifier
		t.Fatal(res.raw)
	}
	f.clock.Add(time.Second)
	now := f.clock.Now()
	if err := f.st.RevokeSubject(t.Context(), "sub-demo", now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if res := f.introspect(at, basic("svc", "svc-secret")); res.body["active"] != false {
		t.Fatalf("introspection of a revoked subject's token: %s", res.raw)
	}
	if err := f.srv.Verifier().RefreshRevocations(t.Context()); err != nil {
		t.Fatal(err)
	}
	if res := f.userinfo("GET", at); res.status != 401 {
		t.Fatalf("userinfo with a revoked subject's token: %d", res.status)
	}
	if res := f.refresh("app", rt); res.status != 400 {
		t.Fatalf("refresh of a revoked subject's family: %s", res.raw)
	}
	f.clock.Add(time.Second)
	fresh := f.login("demo", "demo-pw").str("access_token")
	if res := f.userinfo("GET", fresh); res.status != 200 {
		t.Fatalf("a login after the revocation: %d %s", res.status, res.raw)
	}
}

// A deleted user's tokens end as a revoked subject's do; its password no
// longer logs in; its subject is given to no one again; a user added
// under the same name is a new user, whose tokens work while the old ones
// stay refused.
func TestDeleteUserEndsSessions(t *testing.T) {
	f := newFixture(t)
	login := f.login("demo", "demo-pw")
	at, rt := login.str("access_token"), login.str("refresh_token")
	if res := f.userinfo("GET", at); res.status != 200 {
		t.Fatal(res.raw)
	}
	f.clock.Add(time.Second)
	now := f.clock.Now()
	demo, err := f.st.DeleteUser(t.Context(), "demo", now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if res := f.introspect(at, basic("svc", "svc-secret")); res.body["active"] != false {
		t.Fatalf("introspection of a deleted user's token: %s", res.raw)
	}
	if err := f.srv.Verifier().RefreshRevocations(t.Context()); err != nil {
		t.Fatal(err)
	}
	if res := f.userinfo("GET", at); res.status != 401 {
		t.Fatalf("userinfo with a deleted user's token: %d", res.status)
	}
	if res := f.refresh("app", rt); res.status != 400 || res.body["error"] != "invalid_grant" {
		t.Fatalf("refresh of a deleted user's family: %s", res.raw)
	}
	f.clock.Add(time.Second)
	if res := f.login("demo", "demo-pw"); res.status != 400 || res.body["error"] != "invalid_grant" {
		t.Fatalf("a deleted user's password logged in: %s", res.raw)
	}
	demo.Created, demo.Updated = f.clock.Now(), f.clock.Now()
	if err := f.st.CreateUser(t.Context(), demo); !errors.Is(err, store.ErrSubjectDeleted) {
		t.Fatalf("the deleted user's subject was given again: %v", err)
	}
	demo.Subject = "sub-demo-2"
	if err := f.st.CreateUser(t.Context(), demo); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(time.Second)
	if res := f.userinfo("GET", f.login("demo", "demo-pw").str("access_token")); res.status != 200 {
		t.Fatalf("a login of the user added again: %d %s", res.status, res.raw)
	}
	if res := f.userinfo("GET", at); res.status != 401 {
		t.Fatalf("userinfo with the deleted user's token after the name was taken again: %d", res.status)
	}
	if res := f.refresh("app", rt); res.status != 400 {
		t.Fatalf("refresh of the deleted user's family after the name was taken again: %s", res.raw)
	}
}

// Every endpoint's failures are counted under its own name.
func TestFailuresCountedByEndpoint(t *testing.T) {
	m := &metricsRecorder{}
	f := newFixture(t, func(c *Config) { c.Metrics = m })
	f.login("demo", "wrong")
	f.introspect("x", nil)
	f.revoke(form("token", "x"))
	f.userinfo("GET", "garbage")
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, want := range []string{"token invalid_grant", "introspection invalid_client", "revocation invalid_client", "userinfo invalid_token"} {
		if m.failed[want] != 1 {
			t.Errorf("%q counted %d times: %v", want, m.failed[want], m.failed)
		}
	}
}

// The password grant as a Go call (the message gateway's AuthOwner): the
// client's credentials and the grant are checked as at the token endpoint,
// and the brute-force defence applies.
func TestPasswordGrantCall(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	resp, perr := f.srv.PasswordGrant(ctx, "app", "", "demo", "demo-pw", "Service/Market", "192.0.2.9")
	if perr != nil || resp.AccessToken == "" || resp.Scope != "Service/Market" {
		t.Fatalf("%+v %v", resp, perr)
	}
	for name, call := range map[string][5]string{
		"wrong password":           {"app", "", "demo", "nope", "invalid_grant"},
		"confidential, no secret":  {"conf", "", "demo", "demo-pw", "invalid_client"},
		"client without the grant": {"svc", "svc-secret", "demo", "demo-pw", "unauthorized_client"},
		"unknown client":           {"nobody", "", "demo", "demo-pw", "invalid_client"},
	} {
		if _, perr := f.srv.PasswordGrant(ctx, call[0], call[1], call[2], call[3], "", "192.0.2.9"); perr == nil || perr.Code != call[4] {
			t.Errorf("%s: %v, want %s", name, perr, call[4])
		}
	}
}

// A user holds at most MaxPerUser refresh tokens with a client (100 by
// default): a grant past it ends the oldest one's refresh token, not
// another user's nor the same user's with another client (whose own bound
// applies), and a burst of grants at once leaves no more.
func TestRefreshTokensPerUserBounded(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Refresh.MaxPerUser = 3
		c.PasswordHashConcurrency = 16 // the burst below is not throttled
		for i := range c.Clients {
			if c.Clients[i].ID == "conf" {
				c.Clients[i].Refresh.MaxPerUser = 1
			}
		}
	})
	other := f.login("other", "other-pw").str("refresh_token")
	conf := f.post(form("grant_type", "password", "client_id", "conf", "username", "demo", "password", "demo-pw"),
		basic("conf", "conf-secret")).str("refresh_token")
	var rts []string
	for range 5 {
		res := f.login("demo", "demo-pw")
		if res.status != 200 || res.str("refresh_token") == "" {
			t.Fatalf("login: %s", res.raw)
		}
		rts = append(rts, res.str("refresh_token"))
		f.clock.Add(time.Second)
	}
	for i, rt := range rts {
		res := f.refresh("app", rt)
		if live := i >= 2; live != (res.status == 200) {
			t.Errorf("refresh token %d of 5 with at most 3: %d %s", i, res.status, res.raw)
		} else if !live && res.str("error") != "invalid_grant" {
			t.Errorf("the refresh token of a removed family: %s, want invalid_grant", res.raw)
		}
	}
	if res := f.refresh("app", other); res.status != 200 {
		t.Errorf("another user's refresh token: %s", res.raw)
	}
	if res := f.refresh("conf", conf, basic("conf", "conf-secret")); res.status != 200 {
		t.Errorf("the user's refresh token with another client: %s", res.raw)
	}
	// The other client's own bound, 1.
	conf2 := f.post(form("grant_type", "password", "client_id", "conf", "username", "demo", "password", "demo-pw"),
		basic("conf", "conf-secret")).str("refresh_token")
	if res := f.refresh("conf", conf, basic("conf", "conf-secret")); res.status != 400 {
		t.Errorf("conf's first refresh token after a second grant, at most 1: %d %s", res.status, res.str("error"))
	}
	if res := f.refresh("conf", conf2, basic("conf", "conf-secret")); res.status != 200 {
		t.Errorf("conf's second refresh token: %s", res.raw)
	}

	// A burst of grants at once, at one instant.
	const burst = 16
	burstRTs := make([]string, burst)
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() {
			res := f.post(form("grant_type", "password", "client_id", "app", "username", "demo", "password", "demo-pw"))
			if res.status != 200 {
				t.Errorf("login in a burst: %s", res.raw)
			}
			burstRTs[i] = res.str("refresh_token")
		})
	}
	wg.Wait()
	working := 0
	for _, rt := range append(burstRTs, rts...) {
		if f.refresh("app", rt).status == 200 {
			working++
		}
	}
	if working != 3 {
		t.Errorf("%d of the user's refresh tokens work after a burst of %d grants, want 3", working, burst)
	}
}

// A server does not start on a store holding a user whose subject names
// a client, whatever its case: a client_credentials token's sub is its
// client's ID, so every resource would take the two for one principal.
func TestServerRefusesUserWithClientSubject(t *testing.T) {
	for _, subject := range []string{"svc", "SVC"} {
		f := newFixture(t)
		dh, _ := passwordHashes(t)
		if err := f.st.CreateUser(t.Context(), store.User{Username: "clash", Subject: subject, PasswordHash: dh,
			Scopes: []string{"Service/Market"}}); err != nil {
			t.Fatal(err)
		}
		srv, err := NewServer(t.Context(), f.cfg, f.st)
		if err == nil {
			srv.Close()
		}
		want := fmt.Sprintf(`user "clash" has the subject %q, which names client "svc"`, subject)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a server on a store with a user of subject %q: %v, want an error with %s", subject, err, want)
		}
	}
}

// A server does not start with a client whose ID is a deleted user's
// subject (in any ASCII case): its client_credentials tokens would carry
// the deleted user's sub, and with it the user's rows wherever they are
// keyed by it.
func TestServerRefusesClientNamedByDeletedSubject(t *testing.T) {
	for _, subject := range []string{"svc", "SVC"} {
		f := newFixture(t)
		dh, _ := passwordHashes(t)
		if err := f.st.CreateUser(t.Context(), store.User{Username: "old", Subject: subject, PasswordHash: dh}); err != nil {
			t.Fatal(err)
		}
		now := f.clock.Now()
		if _, err := f.st.DeleteUser(t.Context(), "old", now, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		srv, err := NewServer(t.Context(), f.cfg, f.st)
		if err == nil {
			srv.Close()
		}
		want := fmt.Sprintf(`client "svc" has for its ID the subject %q of a deleted user`, subject)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a server with a client named by the deleted subject %q: %v, want an error with %s", subject, err, want)
		}
	}
}

// A user stored while the server runs with a subject naming a client
// (whatever its case) gets no token, by any grant, and no refresh family
// is stored for it; the client, and other users, keep working.
func TestUserWithClientSubjectGetsNoToken(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	dh, _ := passwordHashes(t)
	if err := f.st.CreateUser(t.Context(), store.User{Username: "clash", Subject: "Svc", PasswordHash: dh,
		Scopes: []string{"openid", "offline_access", "Service/Market"}}); err != nil {
		t.Fatal(err)
	}
	f.records() // the purge a century on: from here, records counts what is stored
	for _, scope := range []string{"openid offline_access Service/Market", "Service/Market"} {
		res := f.login("clash", "demo-pw", "scope", scope)
		if res.status != 500 || res.str("error") != "server_error" || res.str("access_token") != "" {
			t.Errorf("password grant of a user whose subject names a client (scope %q): %d %s", scope, res.status, res.raw)
		}
	}
	// The browser flows: an ID token alone (implicit), and a code.
	b := newBrowser(t, f)
	p := b.consent(b.login(b.authorize(webRequest("id_token")), "clash", "demo-pw"), "allow")
	if v := p.result(t, true); v.Get("id_token") != "" || v.Get("error") != "server_error" {
		t.Errorf("implicit id_token for a user whose subject names a client: %v", v)
	}
	p = b.authorize(webRequest("code"))
	if code := p.result(t, false).Get("code"); code != "" {
		res := f.exchange("web", code, webRedirect, "", basic("web", "web-secret"))
		if res.status != 500 || res.str("access_token") != "" {
			t.Errorf("code exchange for a user whose subject names a client: %d %s", res.status, res.raw)
		}
	} else {
		t.Errorf("no code: %v", p.location)
	}
	if n := f.records(); n != 0 {
		t.Errorf("%d records stored by the refused grants", n)
	}
	if res := f.post(form("grant_type", "client_credentials"), basic("svc", "svc-secret")); res.status != 200 {
		t.Errorf("the client's own grant: %d %s", res.status, res.raw)
	}
	if res := f.login("demo", "demo-pw"); res.status != 200 {
		t.Errorf("another user's grant: %d %s", res.status, res.raw)
	}
}
