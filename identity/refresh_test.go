package identity

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/clients"
)

func TestRefreshRotates(t *testing.T) {
	f := newFixture(t)
	first := f.login("demo", "demo-pw")
	rt := first.str("refresh_token")
	if rt == "" {
		t.Fatal(first.raw)
	}
	res := f.refresh("app", rt)
	if res.status != 200 {
		t.Fatal(res.raw)
	}
	next := res.str("refresh_token")
	if next == "" || next == rt || res.str("access_token") == first.str("access_token") {
		t.Fatalf("refresh did not rotate: %s", res.raw)
	}
	if res.str("scope") != first.str("scope") || res.str("id_token") == "" {
		t.Fatalf("refresh lost scopes or id token: %s", res.raw)
	}
	claims, _ := f.parseToken(res.str("access_token"), "at+jwt")
	if claims["sub"] != "sub-demo" || claims["auth_time"] == nil {
		t.Fatalf("claims %v", claims)
	}
	checkNoStore(t, res.header)
	// The successor refreshes in turn.
	if res := f.refresh("app", next); res.status != 200 {
		t.Fatal(res.raw)
	}
}

// Two tabs refreshing the same token at once both succeed with the same
// successor, instead of logging the user out.
func TestRefreshConcurrentGetsSameSuccessor(t *testing.T) {
	f := newFixture(t)
	rt := f.login("demo", "demo-pw").str("refresh_token")
	const n = 16
	results := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		// Goroutines only record (t.Fatal belongs to the test goroutine).
		wg.Go(func() { results[i] = f.serve(refreshRequest("app", rt)) })
	}
	wg.Wait()
	jtis := map[any]bool{}
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("request %d: %v", i, r.err)
		}
		if r.status != 200 {
			t.Fatalf("request %d: %d %s", i, r.status, r.raw)
		}
		if r.str("refresh_token") != results[0].str("refresh_token") {
			t.Fatalf("different successors")
		}
		c, _ := f.parseToken(r.str("access_token"), "at+jwt")
		jtis[c["jti"]] = true
	}
	if len(jtis) != n {
		t.Fatalf("%d distinct jti for %d access tokens", len(jtis), n)
	}
	if res := f.refresh("app", results[0].str("refresh_token")); res.status != 200 {
		t.Fatal(res.raw)
	}
}

func TestRefreshReplay(t *testing.T) {
	tests := []struct {
		name string
		// act replays the parent after the first refresh; it returns
		// whether the family should now be revoked.
		act        func(f *fixture, parent, successor string) response
		wantStatus int
		wantRevoke bool
	}{
		{name: "same parent inside the grace window gets the same successor",
			act: func(f *fixture, parent, _ string) response {
				f.clock.Add(4 * time.Second)
				return f.refresh("app", parent)
			}, wantStatus: 200},
		{name: "same parent after the grace window revokes the family",
			act: func(f *fixture, parent, _ string) response {
				f.clock.Add(6 * time.Second)
				return f.refresh("app", parent)
			}, wantStatus: 400, wantRevoke: true},
		{name: "same parent after the successor was used revokes the family",
			act: func(f *fixture, parent, successor string) response {
				if r := f.refresh("app", successor); r.status != 200 {
					f.t.Fatal(r.raw)
				}
				return f.refresh("app", parent)
			}, wantStatus: 400, wantRevoke: true},
		{name: "another client cannot use the token and revokes nothing",
			act: func(f *fixture, parent, _ string) response {
				return f.refresh("app2", parent)
			}, wantStatus: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			login := f.login("demo", "demo-pw")
			parent := login.str("refresh_token")
			res := f.refresh("app", parent)
			successor := res.str("refresh_token")
			if ui := f.userinfo("GET", res.str("access_token")); ui.status != 200 { // now in the verifier's cache
				t.Fatalf("userinfo before the replay: %d %s", ui.status, ui.raw)
			}
			replay := tt.act(f, parent, successor)
			if replay.status != tt.wantStatus {
				t.Fatalf("replay: %d %s", replay.status, replay.raw)
			}
			if tt.wantStatus == 200 && replay.str("refresh_token") != successor {
				t.Fatal("grace window gave another successor")
			}
			if tt.wantStatus != 200 && replay.str("error") != "invalid_grant" {
				t.Fatalf("error %s", replay.raw)
			}
			rev, err := f.st.Revocations(t.Context(), f.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if !tt.wantRevoke {
				if len(rev) != 0 {
					t.Fatalf("revocations %v", rev)
				}
				return
			}
			// Every token of the family is dead, and the access tokens
			// issued from it are revoked with it, by their fid.
			latest := f.refresh("app", successor)
			if latest.status != 400 || latest.str("error") != "invalid_grant" {
				t.Fatalf("family still usable: %s", latest.raw)
			}
			revoked := map[string]bool{}
			for _, r := range rev {
				revoked[r.FamilyID] = true
			}
			for _, at := range []string{login.str("access_token"), res.str("access_token")} {
				c, _ := f.parseToken(at, "at+jwt")
				if fid, _ := c["fid"].(string); fid == "" || !revoked[fid] {
					t.Errorf("access token %v: its family %v not revoked", c["jti"], c["fid"])
				}
				// At once on this instance, with no poll in between.
				if ui := f.userinfo("GET", at); ui.status != 401 {
					t.Errorf("access token %v still passes userinfo: %d", c["jti"], ui.status)
				}
			}
		})
	}
}

func TestRefreshValidation(t *testing.T) {
	f := newFixture(t)
	confLogin := f.post(form("grant_type", "password", "username", "demo", "password", "demo-pw", "scope", "offline_access Service/Market"), basic("conf", "conf-secret"))
	confRT := confLogin.str("refresh_token")
	if confRT == "" {
		t.Fatal(confLogin.raw)
	}
	tests := []struct {
		name       string
		form       func() (string, []func(*http.Request))
		wantStatus int
		wantErr    string
	}{
		{"unknown token", func() (string, []func(*http.Request)) { return "app|nope", nil }, 400, "invalid_grant"},
		{"confidential client must authenticate", func() (string, []func(*http.Request)) { return "conf|" + confRT, nil }, 400, "invalid_client"},
		{"confidential client with wrong secret", func() (string, []func(*http.Request)) {
			return "|" + confRT, []func(*http.Request){basic("conf", "bad")}
		}, 401, "invalid_client"},
		{"confidential client authenticated", func() (string, []func(*http.Request)) {
			return "|" + confRT, []func(*http.Request){basic("conf", "conf-secret")}
		}, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, mods := tt.form()
			clientID, token, _ := cut(spec)
			fm := form("grant_type", "refresh_token", "refresh_token", token)
			if clientID != "" {
				fm.Set("client_id", clientID)
			}
			res := f.post(fm, mods...)
			if res.status != tt.wantStatus || res.str("error") != tt.wantErr {
				t.Fatalf("%d %s", res.status, res.raw)
			}
		})
	}
	t.Run("missing refresh_token", func(t *testing.T) {
		if res := f.post(form("grant_type", "refresh_token", "client_id", "app")); res.str("error") != "invalid_request" {
			t.Fatal(res.raw)
		}
	})
	t.Run("narrower scope", func(t *testing.T) {
		rt := f.login("demo", "demo-pw").str("refresh_token")
		res := f.post(form("grant_type", "refresh_token", "client_id", "app", "refresh_token", rt, "scope", "Service/Market"))
		if res.status != 200 || res.str("scope") != "Service/Market" {
			t.Fatal(res.raw)
		}
		// The family keeps its original grant.
		res = f.refresh("app", res.str("refresh_token"))
		if res.status != 200 || res.str("scope") != "openid profile email offline_access Service/Market Service/News" {
			t.Fatal(res.raw)
		}
	})
	t.Run("wider scope", func(t *testing.T) {
		rt := f.login("demo", "demo-pw", "scope", "offline_access Service/Market").str("refresh_token")
		res := f.post(form("grant_type", "refresh_token", "client_id", "app", "refresh_token", rt, "scope", "Service/News"))
		if res.str("error") != "invalid_scope" {
			t.Fatal(res.raw)
		}
		// A refused request changed nothing: the token still works.
		if res := f.refresh("app", rt); res.status != 200 {
			t.Fatal(res.raw)
		}
	})
	t.Run("disabled user", func(t *testing.T) {
		rt := f.login("demo", "demo-pw").str("refresh_token")
		u, _ := f.st.User(t.Context(), "demo")
		u.Disabled = true
		if err := f.st.UpdateUser(t.Context(), u); err != nil {
			t.Fatal(err)
		}
		defer func() {
			u.Disabled = false
			_ = f.st.UpdateUser(t.Context(), u)
		}()
		if res := f.refresh("app", rt); res.str("error") != "invalid_grant" {
			t.Fatal(res.raw)
		}
	})
}

func cut(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == '|' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func TestRefreshLifetimes(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Refresh = clients.RefreshPolicy{SlidingLifetime: time.Hour, AbsoluteLifetime: 3 * time.Hour}
	})
	rt := f.login("demo", "demo-pw").str("refresh_token")
	// Sliding: used within the hour, each refresh extends it...
	for range 2 {
		f.clock.Add(50 * time.Minute)
		res := f.refresh("app", rt)
		if res.status != 200 {
			t.Fatal(res.raw)
		}
		rt = res.str("refresh_token")
	}
	// ...until an hour without use.
	f.clock.Add(61 * time.Minute)
	if res := f.refresh("app", rt); res.str("error") != "invalid_grant" {
		t.Fatal(res.raw)
	}
	// Absolute: three hours after login, however often it was used.
	rt = f.login("demo", "demo-pw").str("refresh_token")
	for range 3 {
		f.clock.Add(55 * time.Minute)
		res := f.refresh("app", rt)
		if res.status != 200 {
			t.Fatal(res.raw)
		}
		rt = res.str("refresh_token")
	}
	f.clock.Add(20 * time.Minute)
	if res := f.refresh("app", rt); res.str("error") != "invalid_grant" {
		t.Fatal(res.raw)
	}
}

// A restart (a new server on the same store) keeps the keys and the
// refresh-token secret: tokens from before verify and refresh.
func TestRestartKeepsKeysAndTokens(t *testing.T) {
	f := newFixture(t)
	before := f.login("demo", "demo-pw")
	f.restart()
	f.parseToken(before.str("access_token"), "at+jwt")
	res := f.refresh("app", before.str("refresh_token"))
	if res.status != 200 {
		t.Fatal(res.raw)
	}
	// The grace answer is the same on the new instance.
	f.restart()
	again := f.refresh("app", before.str("refresh_token"))
	if again.status != 200 || again.str("refresh_token") != res.str("refresh_token") {
		t.Fatal(again.raw)
	}
}
