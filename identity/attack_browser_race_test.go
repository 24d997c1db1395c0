package identity

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Two users' browsers answer the same user code at once, many times each
// (demo allows, other allows too): exactly one answer is recorded, and
// the device gets the tokens of the user whose answer won.
func TestDeviceDecisionRace(t *testing.T) {
	f := newDeviceFixture(t)
	res := f.startDevice("openid")
	type tab struct {
		b    *browser
		form url.Values
		sub  string
	}
	var tabs []tab
	for _, u := range []struct{ name, pw, sub string }{{"demo", "demo-pw", "sub-demo"}, {"other", "other-pw", "sub-other"}} {
		b := newBrowser(t, f)
		p := b.deviceLogin(b.openVerification(res.str("verification_uri_complete")), u.name, u.pw)
		if !strings.Contains(p.body, `value="decide"`) {
			t.Fatalf("%s: no confirmation page: %d %s", u.name, p.status, p.body)
		}
		fm := p.fields()
		fm.Set("decision", "allow")
		tabs = append(tabs, tab{b, fm, u.sub})
	}
	const perTab = 6
	type result struct {
		sub    string
		status int
		body   string
	}
	out := make(chan result, perTab*len(tabs))
	var wg sync.WaitGroup
	for i := 0; i < perTab; i++ {
		for _, tb := range tabs {
			wg.Go(func() {
				p := tb.b.post(PathDeviceVerification, tb.form)
				out <- result{tb.sub, p.status, p.body}
			})
		}
	}
	wg.Wait()
	close(out)
	winner, won := "", 0
	for r := range out {
		if r.status == http.StatusOK && strings.Contains(r.body, "Device connected") {
			won++
			winner = r.sub
		}
	}
	if won != 1 {
		t.Fatalf("%d answers recorded, want 1", won)
	}
	tok := f.poll("tv", res.str("device_code"))
	if tok.status != 200 {
		t.Fatalf("poll: %d %s", tok.status, tok.raw)
	}
	if claims, _ := f.parseToken(tok.str("id_token"), "JWT"); claims["sub"] != winner {
		t.Fatalf("the device got %v's tokens, but %s's answer won", claims["sub"], winner)
	}
}

// A burst of wrong passwords posted in parallel through the login form
// (each with a good anti-forgery token) cannot try more than the lockout
// allows: the right password afterwards is refused.
func TestLoginFormBurstLocks(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b := newBrowser(t, f)
	p := b.authorize(codeRequest())
	fm := p.fields()
	fm.Set("username", "demo")
	fm.Set("password", "wrong")
	const n = 16
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			statuses <- b.post(PathLogin, fm).status
		})
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st == http.StatusSeeOther {
			t.Fatal("a wrong password logged in")
		}
	}
	if got := b.login(b.authorize(codeRequest()), "demo", "demo-pw"); got.status == http.StatusSeeOther {
		t.Fatalf("after %d wrong passwords in a burst, the right one logged in: the burst was not counted", n)
	}
}
