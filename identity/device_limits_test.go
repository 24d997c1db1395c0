package identity

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/device"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
)

// TestDeviceUserCodeGuessing: wrong user codes sent in parallel bursts,
// from one session and address, are refused once over the limit (10),
// whatever the concurrency; the good code is then refused as well for
// that session and address, and still works for another user elsewhere.
func TestDeviceUserCodeGuessing(t *testing.T) {
	f := newDeviceFixture(t)
	res := f.startDevice("openid")
	b := newBrowser(t, f)
	if wrong := burst(t, f, []*browser{b}, 40, func(int) string { return "192.0.2.1:1234" }); wrong > 10 {
		t.Fatalf("%d wrong codes looked up, want at most 10", wrong)
	}
	base := b.openVerification(testIssuer + PathDeviceVerification).fields()
	// Now even the good code is refused for this session and address,
	// and the authorization is untouched.
	v := url.Values{"csrf_token": {base.Get("csrf_token")}, "step": {"code"}, "user_code": {res.str("user_code")}}
	if p := b.post(PathDeviceVerification, v); p.status != http.StatusTooManyRequests {
		t.Errorf("good code after the burst: %d", p.status)
	}
	if d := f.deviceRecord(res.str("device_code")); d.State != store.DevicePending {
		t.Errorf("state %s", d.State)
	}
	// Another user from another address still gets through.
	other := newBrowser(t, f)
	login := other.do(withRemote(httptest.NewRequest(http.MethodGet, res.str("verification_uri_complete"), nil), "198.51.100.7:5555"))
	lf := login.fields()
	lf.Set("username", "other")
	lf.Set("password", "other-pw")
	req := httptest.NewRequest(http.MethodPost, testIssuer+PathDeviceVerification, strings.NewReader(lf.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", testIssuer)
	back := other.do(withRemote(req, "198.51.100.7:5555"))
	if back.location == nil {
		t.Fatalf("other login: %d %s", back.status, back.body)
	}
	confirm := other.do(withRemote(httptest.NewRequest(http.MethodGet, testIssuer+back.location.String(), nil), "198.51.100.7:5555"))
	if confirm.status != http.StatusOK || !strings.Contains(confirm.body, `value="decide"`) {
		t.Errorf("another address and session: %d %s", confirm.status, confirm.body)
	}
}

// guess is the i-th wrong code suffix (from the alphabet, never issued in
// this test with overwhelming probability).
func guess(i int) string {
	const a = "BCDFGHJKLMNPQRSTVWXZ"
	return string([]byte{a[i%20], a[(i/20)%20], 'X', 'Z'})
}

func withRemote(r *http.Request, addr string) *http.Request {
	r.RemoteAddr = addr
	return r
}

// TestDeviceUserCodeGuessingGlobal: wrong codes spread over many
// addresses and sessions, in parallel, count against the server-wide
// limit: past it, every entry is refused, the good code of a fresh user
// at a fresh address included, until the lockout ends.
func TestDeviceUserCodeGuessingGlobal(t *testing.T) {
	f := newFixture(t, withBrowserClients, withDeviceClients, func(c *Config) {
		c.DeviceEntryLimits.Global = 6
		c.DeviceEntryLimits.GlobalLockout = time.Minute
	})
	res := f.startDevice("openid")
	const guessers = 4
	enter := make([]page, guessers)
	bs := make([]*browser, guessers)
	for i := range guessers {
		bs[i] = newBrowser(t, f)
		enter[i] = bs[i].deviceLogin(bs[i].openVerification(testIssuer+PathDeviceVerification), "demo", "demo-pw")
	}
	const perGuesser = 5
	statuses := make(chan int, guessers*perGuesser)
	var wg sync.WaitGroup
	for i := range guessers {
		for j := range perGuesser {
			wg.Go(func() {
				v := url.Values{"csrf_token": {enter[i].fields().Get("csrf_token")}, "step": {"code"},
					"user_code": {"BBBB-" + guess(i*perGuesser+j)}}
				req := httptest.NewRequest(http.MethodPost, testIssuer+PathDeviceVerification, strings.NewReader(v.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Origin", testIssuer)
				req.RemoteAddr = fmt.Sprintf("203.0.113.%d:4000", 10+i*perGuesser+j) // every guess from its own address
				for _, c := range bs[i].jar.Cookies(req.URL) {
					req.AddCookie(c)
				}
				rec := httptest.NewRecorder()
				f.srv.ServeHTTP(rec, req)
				statuses <- rec.Code
			})
		}
	}
	wg.Wait()
	close(statuses)
	wrong := 0
	for s := range statuses {
		if s == http.StatusBadRequest {
			wrong++
		} else if s != http.StatusTooManyRequests {
			t.Errorf("status %d", s)
		}
	}
	if wrong > 6 {
		t.Fatalf("%d wrong codes looked up, want at most the global limit 6", wrong)
	}
	fresh := newBrowser(t, f)
	login := fresh.do(withRemote(httptest.NewRequest(http.MethodGet, res.str("verification_uri_complete"), nil), "198.51.100.9:1"))
	lf := login.fields()
	lf.Set("username", "other")
	lf.Set("password", "other-pw")
	req := httptest.NewRequest(http.MethodPost, testIssuer+PathDeviceVerification, strings.NewReader(lf.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", testIssuer)
	back := fresh.do(withRemote(req, "198.51.100.9:1"))
	target := testIssuer + back.location.String()
	if p := fresh.do(withRemote(httptest.NewRequest(http.MethodGet, target, nil), "198.51.100.9:1")); p.status != http.StatusTooManyRequests {
		t.Errorf("good code during the global lockout: %d", p.status)
	}
	f.clock.Add(2 * time.Minute) // past the global lockout, the code still valid
	if p := fresh.do(withRemote(httptest.NewRequest(http.MethodGet, target, nil), "198.51.100.9:1")); p.status != http.StatusOK {
		t.Errorf("good code after the lockout: %d", p.status)
	}
}

// burst sends n wrong user codes at once, the i-th from browser bs[i%len]
// and address addr(i), and returns how many were looked up (400) rather
// than refused (429).
func burst(t *testing.T, f *fixture, bs []*browser, n int, addr func(i int) string) int {
	t.Helper()
	tokens := make([]string, len(bs))
	for i, b := range bs {
		tokens[i] = b.deviceLogin(b.openVerification(testIssuer+PathDeviceVerification), "demo", "demo-pw").fields().Get("csrf_token")
	}
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			b := bs[i%len(bs)]
			v := url.Values{"csrf_token": {tokens[i%len(bs)]}, "step": {"code"}, "user_code": {"CCCC-" + guess(i)}}
			req := httptest.NewRequest(http.MethodPost, testIssuer+PathDeviceVerification, strings.NewReader(v.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", testIssuer)
			req.RemoteAddr = addr(i)
			for _, c := range b.jar.Cookies(req.URL) {
				req.AddCookie(c)
			}
			rec := httptest.NewRecorder()
			f.srv.ServeHTTP(rec, req)
			statuses[i] = rec.Code
		})
	}
	wg.Wait()
	wrong := 0
	for _, s := range statuses {
		switch s {
		case http.StatusBadRequest:
			wrong++
		case http.StatusTooManyRequests:
		default:
			t.Errorf("status %d", s)
		}
	}
	return wrong
}

// TestDeviceUserCodeLimitsApart: the per-session limit holds for one
// session guessing from many addresses, the per-address limit for one
// address guessing with many sessions.
func TestDeviceUserCodeLimitsApart(t *testing.T) {
	t.Run("one session, many addresses", func(t *testing.T) {
		f := newDeviceFixture(t)
		if n := burst(t, f, []*browser{newBrowser(t, f)}, 30, func(i int) string { return fmt.Sprintf("203.0.113.%d:1", i+1) }); n > 10 {
			t.Errorf("%d wrong codes looked up for one session, want at most 10", n)
		}
	})
	t.Run("one address, many sessions", func(t *testing.T) {
		f := newDeviceFixture(t)
		bs := []*browser{newBrowser(t, f), newBrowser(t, f), newBrowser(t, f), newBrowser(t, f), newBrowser(t, f), newBrowser(t, f)}
		if n := burst(t, f, bs, 30, func(int) string { return "203.0.113.1:1" }); n > 10 {
			t.Errorf("%d wrong codes looked up from one address, want at most 10", n)
		}
	})
	t.Run("one IPv6 /64, many sessions and addresses", func(t *testing.T) {
		f := newDeviceFixture(t)
		bs := []*browser{newBrowser(t, f), newBrowser(t, f), newBrowser(t, f), newBrowser(t, f), newBrowser(t, f), newBrowser(t, f)}
		if n := burst(t, f, bs, 60, func(i int) string { return fmt.Sprintf("[2001:db8:1:2::%x]:1", i+1) }); n > 10 {
			t.Errorf("%d wrong codes looked up from one /64, want at most 10", n)
		}
	})
}

// TestDeviceAuthorizationBurst: one address starts at most
// AuthorizationsPerSource device authorizations in a window, however
// many it sends at once; the rest get 429 slow_down and store nothing;
// another address is not affected.
func TestDeviceAuthorizationBurst(t *testing.T) {
	f := newDeviceFixture(t)
	const n = 90
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res := f.deviceAuthorize(form("client_id", "tv", "scope", "openid"), func(r *http.Request) {
				r.RemoteAddr = fmt.Sprintf("[2001:db8:5::%x]:1", i+1) // one /64
			})
			statuses[i] = res.status
			if res.status == http.StatusTooManyRequests && res.str("error") != oauth.ErrSlowDown {
				t.Errorf("refusal: %s", res.raw)
			}
		})
	}
	wg.Wait()
	ok := 0
	for _, s := range statuses {
		switch s {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
		default:
			t.Errorf("status %d", s)
		}
	}
	if want := device.DefaultLimits.AuthorizationsPerSource; ok != want {
		t.Errorf("%d device authorizations started from one address, want %d", ok, want)
	}
	if res := f.deviceAuthorize(form("client_id", "tv", "scope", "openid"), func(r *http.Request) { r.RemoteAddr = "198.51.100.9:1" }); res.status != http.StatusOK {
		t.Errorf("another address: %d %s", res.status, res.raw)
	}
}

// TestDeviceAuthorizationsGlobalBound: the device authorization endpoint
// needs only a public client's id, and each call stores a pending
// authorization. Past Authorizations in the window, over the whole server,
// it answers 429 slow_down, whatever the addresses: a parallel burst of
// 3,000 requests from 3,000 IPv6 /64s (one /48 holds 65,536) stores the
// bound and no more. (It failed with the per-source bound alone: all
// 3,000 were stored.)
func TestDeviceAuthorizationsGlobalBound(t *testing.T) {
	const bound, sources = 1_000, 3_000
	f := newFixture(t, withBrowserClients, withDeviceClients, func(c *Config) { c.DeviceEntryLimits.Authorizations = bound })
	var ok, limited, other atomic.Int64
	parallel(sources, 32, func(i int) {
		res := f.serve(deviceRequest(fmt.Sprintf("[2001:db8:%x:%x::1]", i>>16, i&0xffff)))
		switch {
		case res.status == http.StatusOK:
			ok.Add(1)
		case res.status == http.StatusTooManyRequests && res.str("error") == "slow_down":
			limited.Add(1)
		default:
			other.Add(1)
		}
	})
	if ok.Load() != bound || limited.Load() != sources-bound || other.Load() != 0 {
		t.Errorf("%d device authorizations from %d /64s: %d accepted, %d slow_down, %d other; want %d accepted",
			sources, sources, ok.Load(), limited.Load(), other.Load(), bound)
	}
	// A source refused by the server's bound keeps its own count.
	if res := f.serve(deviceRequest("[2001:db8:ffff:1::1]")); res.status != http.StatusTooManyRequests {
		t.Fatalf("a new source past the server's bound: %d %s", res.status, res.raw)
	}
	if c, err := f.st.Counter(context.Background(), "device-authorization/source/2001:db8:ffff:1::/64"); err != nil || c.Count != 0 {
		t.Errorf("the refused source's count: %+v, %v; want 0", c, err)
	}
}

// deviceRequest is a device authorization request of the public client tv
// from addr.
func deviceRequest(addr string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, testIssuer+PathDeviceAuthorize,
		strings.NewReader(form("client_id", "tv", "scope", "openid Service/Market").Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	from(addr)(req)
	return req
}
