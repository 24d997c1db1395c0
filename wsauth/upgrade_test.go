package wsauth

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// TestHeaderAuthWithinAuthBounds: an upgrade's Authorization header is
// verified within Auth.Timeout, and counts against MaxUnauthenticated while
// it is: a parallel burst of header upgrades against a verifier that hangs
// is answered (503) and never has more verifications under way than the
// bound. It failed when the header was verified under the request's
// context alone, outside the bound: all twelve hung in the verifier for as
// long as it took.
func TestHeaderAuthWithinAuthBounds(t *testing.T) {
	const burst, bound = 12, 2
	hv := &hungVerifier{}
	e := newTestEnv(t, func(c *Config) {
		c.Auth.Timeout = 300 * time.Millisecond
		c.Auth.MaxUnauthenticated = bound
		c.Hooks.Verifier = hv
	})
	conns := make([]*handConn, burst)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() { conns[i] = handDial(t, e, "Authorization: Bearer "+tokHang+"\r\n", 5*time.Second) })
	}
	wg.Wait()
	for i, c := range conns {
		if c.resp == nil || c.resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("upgrade %d: %v, want 503 within AuthTimeout (or at once, past the bound)", i, c.resp)
		}
	}
	if n := hv.most.Load(); n < 1 || n > bound {
		t.Fatalf("%d verifications under way at once, bound %d", n, bound)
	}
	eventually(t, "the verification count back to 0", func() bool { return e.gw.places.verifying.Load() == 0 })
}

// hungVerifier's verifications wait for their context to end; most is the
// most under way at once.
type hungVerifier struct{ now, most atomic.Int64 }

func (v *hungVerifier) VerifyAccessToken(ctx context.Context, _ string) (Identity, error) {
	n := v.now.Add(1)
	defer v.now.Add(-1)
	for m := v.most.Load(); n > m && !v.most.CompareAndSwap(m, n); m = v.most.Load() {
	}
	<-ctx.Done()
	return Identity{}, ctx.Err()
}

// TestUnauthBoundHoldsUnderABurst: a parallel burst of upgrades without
// credentials never opens more sockets than MaxUnauthenticated, and the
// count returns to zero once they close.
func TestUnauthBoundHoldsUnderABurst(t *testing.T) {
	const bound, burst = 8, 64
	e := newTestEnv(t, func(c *Config) { c.Auth.MaxUnauthenticated = bound })
	conns := make([]*handConn, burst)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i] = handDial(t, e, "", 5*time.Second)
		}()
	}
	wg.Wait()
	opened, refused := 0, 0
	for _, c := range conns {
		switch {
		case c.resp == nil:
			t.Fatal("an upgrade was not answered")
		case c.resp.StatusCode == http.StatusSwitchingProtocols:
			opened++
		case c.resp.StatusCode == http.StatusServiceUnavailable:
			refused++
		}
	}
	if opened > bound || opened+refused != burst {
		t.Fatalf("opened %d, refused %d of %d with a bound of %d", opened, refused, burst, bound)
	}
	for _, c := range conns {
		c.Close()
	}
	eventually(t, "the unauthenticated count to return to 0", func() bool { return e.gw.places.unauth.Load() == 0 })
	e.dial(nil)
}

// TestOddAuthorizationHeadersRefused: the header forms an attacker might
// try get 403 without the backend being dialed; none of them, nor a
// refused AuthToken or AuthOwner, puts the secret into the logs.
func TestOddAuthorizationHeadersRefused(t *testing.T) {
	const secret = "s3cr3t-TOKEN-value"
	e := newTestEnv(t, func(c *Config) { c.Hooks.Passwords = fakePasswords{} })
	for _, h := range []string{
		"Authorization: Bearer\t" + tokDemo + "\r\n",
		"Authorization: Bearer " + tokDemo + ", Bearer " + secret + "\r\n",
		"Authorization: Bearer " + secret + "\r\nAuthorization: Bearer " + tokDemo + "\r\n",
		"Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+secret)) + "\r\n",
		"Authorization: Bearer " + strings.Repeat("A", zenith.DefaultMaxTokenBytes+1) + "\r\n",
		"Authorization: BearerX " + tokDemo + "\r\n",
		"Authorization:  " + secret + "\r\n",
		"Authorization: Bearer " + secret + "\r\n",
	} {
		c := handDial(t, e, h, 5*time.Second)
		if c.resp == nil || c.resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%q: %v", h[:min(len(h), 40)], c.resp)
		}
		c.Close()
	}
	c := e.dial(nil)
	roundTrip(t, c, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":1,"Data":{"Provider":"Bearer","AccessToken":"`+secret+`"}}`)
	roundTrip(t, c, `{"Controller":"Auth","Topic":"AuthOwner","TransactionID":2,"Data":{"ClientID":"demo-app","Username":"trader","Password":"`+secret+`"}}`)
	roundTrip(t, c, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":3,"Data":{"Provider":"`+secret+`","AccessToken":"x"}}`)
	roundTrip(t, c, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":4,"Data":{"Provider":"Bearer","AccessToken":"`+secret+`"},"x":}`)
	if n := e.backend.upgrades(); n != 0 {
		t.Fatalf("backend dialed %d times", n)
	}
	for _, entry := range e.logs.All() {
		line := entry.Message + fmt.Sprint(entry.ContextMap())
		if strings.Contains(line, secret) || strings.Contains(line, base64.StdEncoding.EncodeToString([]byte("u:"+secret))) {
			t.Fatalf("the log leaks the secret: %s", line)
		}
	}
}

// TestCrossOriginAndSubprotocolRefused: cross-origin upgrades (another
// host, two Origin headers, a host with a suffix) are refused before the
// verifier is asked; a sub-protocol list without ServiceJson is refused.
func TestCrossOriginAndSubprotocolRefused(t *testing.T) {
	e := newTestEnv(t, nil)
	host := e.srv.Listener.Addr().String()
	for _, tt := range []struct{ extra string }{
		{"Origin: http://evil.example\r\n"},
		{"Origin: http://" + host + ".evil.example\r\n"},
		{"Origin: http://" + host + "\r\nOrigin: http://evil.example\r\n"},
		{"Origin: null\r\n"},
		{"Origin: http://evil.example/" + host + "\r\n"},
	} {
		c := handDial(t, e, tt.extra+"Authorization: Bearer "+tokDemo+"\r\n", 5*time.Second)
		if c.resp == nil || c.resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%q: %v", tt.extra, c.resp)
		}
		c.Close()
	}
	if n := e.ver.calls.Load(); n != 0 {
		t.Fatalf("the verifier was asked %d times for cross-origin upgrades", n)
	}
	d := &websocket.Dialer{Subprotocols: []string{"servicejson", "Other"}}
	if _, resp, err := e.tryDial(nil, d); err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("unknown sub-protocols: %v %v", resp, err)
	}
	for _, q := range []string{"version=1.1&version=2.0", "version=1.1%0d%0aX:1", "version=1.1&x=%zz", "version=" + strconv.Itoa(1<<30)} {
		c := handDialPath(t, e, "/ws?"+q, "", 5*time.Second)
		if c.resp == nil || c.resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("?%s: %v", q, c.resp)
		}
		c.Close()
	}
}
