package wsauth

// Attacks on the gateway's front door and per-message authorization: the
// upgrade, the Auth messages, the envelope parser and the policy, the
// frame handling on both legs (permessage-deflate included), made the way
// an attacker makes them: crafted frames, parallel bursts. The first two
// found bugs, now fixed (a socket without a credential could pin a
// megabyte, and header verification ran outside the auth bounds); the
// others held.

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// --- helpers -----------------------------------------------------------------

// afConn is a hand-made WebSocket client on TCP.
type afConn struct {
	net.Conn
	br   *bufio.Reader
	resp *http.Response
}

// afDial opens a TCP connection to the gateway and sends an upgrade with
// the extra header lines (each ending in \r\n); it returns once the
// response head is read, or with resp nil when none came within wait.
func afDial(t testing.TB, e *testEnv, extra string, wait time.Duration) *afConn {
	t.Helper()
	return afDialPath(t, e, "/ws?version=1.1", extra, wait)
}

// afDialPath is afDial with the request target path.
func afDialPath(t testing.TB, e *testEnv, path, extra string, wait time.Duration) *afConn {
	t.Helper()
	c, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := "GET " + path + " HTTP/1.1\r\nHost: " + e.srv.Listener.Addr().String() + "\r\n" +
		"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " + DefaultSubprotocol + "\r\n" + extra + "\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	ac := &afConn{Conn: c, br: bufio.NewReader(c)}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(ac.br, nil)
	_ = c.SetReadDeadline(time.Time{})
	if err == nil {
		ac.resp = resp
	}
	return ac
}

// afFrame is one masked client frame whose first byte is b0 (FIN, RSV
// bits, opcode), its length in the shortest form.
func afFrame(b0 byte, payload []byte) []byte {
	key := [4]byte{0xa1, 0xb2, 0xc3, 0xd4}
	return wsframe.AppendMasked(wsframe.AppendHeader(nil, b0, len(payload), key[:]), payload, key)
}

// afCloseCode reads server frames until a close frame (its code), or -1
// when the stream ends without one, or 0 when wait passes first.
func afCloseCode(c *afConn, wait time.Duration) int {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	for range 10_000 {
		b0, p, err := readFrame(c.br)
		if isTimeout(err) {
			return 0
		}
		if err != nil {
			return -1
		}
		if b0&0xf == websocket.CloseMessage {
			if len(p) < 2 {
				return websocket.CloseNoStatusReceived
			}
			return int(binary.BigEndian.Uint16(p))
		}
	}
	return -1
}

// afDeflate is data compressed as one permessage-deflate frame payload
// (RFC 7692: a sync flush, its empty stored block's tail dropped).
func afDeflate(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(data)
	_ = w.Flush()
	return bytes.TrimSuffix(buf.Bytes(), []byte{0, 0, 0xff, 0xff})
}

// --- the two that found bugs ---------------------------------------------------

// TestPreAuthMessageBound: before authenticating, a message is bounded by
// what the largest Auth message needs, not MaxMessageBytes. It failed with
// the one bound: 32 sockets without a credential each sent one unfinished
// compressed text frame of 1,130 bytes, and each had the gateway hold
// about 1 MiB (the frame inflated) until its auth deadline, some 1 GiB at
// the default MaxUnauthenticated. Now the socket is closed with 1009 as
// soon as the inflated message passes the bound, and an AuthToken with a
// token of MaxTokenBytes, its text escaped, still fits.
func TestPreAuthMessageBound(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Auth.Timeout = 20 * time.Second })
	prefix := `{"Controller":"Auth","Topic":"AuthToken","TransactionID":1,"Data":{"Provider":"Bearer","AccessToken":"`
	body := append([]byte(prefix), bytes.Repeat([]byte("A"), DefaultMaxMessageBytes-len(prefix)-64)...)
	frame := afFrame(0x40|websocket.TextMessage, afDeflate(t, body)) // RSV1, text, no FIN: the message goes on
	c := afDial(t, e, "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover; server_no_context_takeover\r\n", 5*time.Second)
	if c.resp == nil || c.resp.StatusCode != http.StatusSwitchingProtocols ||
		!strings.Contains(c.resp.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate") {
		t.Fatal("no socket with permessage-deflate")
	}
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	if code := afCloseCode(c, 5*time.Second); code != websocket.CloseMessageTooBig {
		t.Fatalf("close code %d, want 1009 before the auth deadline", code)
	}

	// The largest token there may be, one character in five of its text
	// escaped (\u0041 for A), fits the bound.
	ws := e.dial(nil)
	escaped := strings.Repeat(`AAAA\u0041`, base64.StdEncoding.EncodedLen(zenith.DefaultMaxTokenBytes)/5)
	msg := `{"Controller":"Auth","Topic":"AuthToken","TransactionID":1,"Data":{"Provider":"Bearer","AccessToken":"` + escaped + `"}}`
	if got := roundTrip(t, ws, msg); !strings.Contains(got, `"Result":"Reject"`) {
		t.Fatalf("an AuthToken of %d bytes: %s (want a Reject: the token is unknown, not the message too big)", len(msg), got)
	}
}

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
	conns := make([]*afConn, burst)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() { conns[i] = afDial(t, e, "Authorization: Bearer "+tokHang+"\r\n", 5*time.Second) })
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

// --- attacks that held -----------------------------------------------------

// TestAttackUnauthBoundBurst: a parallel burst of upgrades without
// credentials never opens more sockets than MaxUnauthenticated, and the
// count returns to zero once they close.
func TestAttackUnauthBoundBurst(t *testing.T) {
	const bound, burst = 8, 64
	e := newTestEnv(t, func(c *Config) { c.Auth.MaxUnauthenticated = bound })
	conns := make([]*afConn, burst)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i] = afDial(t, e, "", 5*time.Second)
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

// TestAttackEnvelopeDifferentials: a session without the Trading scope
// sends, in one burst, messages a lenient parser (case-insensitive names,
// last duplicate wins, comments, trailing data, BOM, Enum.Parse-style
// values) could read as Trading/Orders or Trading/PlaceOrder. None reaches
// the backend; the socket stays usable.
func TestAttackEnvelopeDifferentials(t *testing.T) {
	e := newTestEnv(t, nil)
	c := e.dial(bearer(tokDemo)) // Market, News: no Trading, no OrderPad
	msgs := []string{
		`{"Controller":"Trading","Topic":"Orders"}`,
		`{"Controller":"Tr\u0061ding","Topic":"Ord\u0065rs"}`,
		`{"Controller":"trading","Topic":"Orders"}`,
		`{"Controller":"TRADING","Topic":"PlaceOrder"}`,
		`{"Controller":" Trading","Topic":"Orders"}`,
		`{"Controller":"Trading ","Topic":"Orders"}`,
		`{"Controller":"Market, Trading","Topic":"Orders"}`,
		`{"Controller":"Trading","Topic":"orders"}`,
		`{"Controller":"Trading","Topic":"Orders "}`,
		`{"Controller":"Trading","Topic":"Orders\u0000"}`,
		`{"Controller":"Trading","Topic":"Orders\t"}`,
		`{"Controller":"Trading","Topic":"!Orders"}`,
		`{"Controller":"Market","Topic":"Echo","controller":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","CONTROLLER":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","Contr\u006fller":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","Controller\/":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","Controller ":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","_Controller":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","Cοntroller":"Trading"}`, // Greek omicron
		`{"Controller":"Market","Topic":"Echo","Topic":"Orders"}`,
		`{"Controller":"Market","Topic":"Echo","topic":"PlaceOrder"}`,
		`{"Controller":"Market","Topic":"Echo","Controller":null}`,
		`{"Controller":"Market","Topic":"Echo"}{"Controller":"Trading","Topic":"Orders"}`,
		`{"Controller":"Market","Topic":"Echo"},{"Controller":"Trading","Topic":"Orders"}`,
		"\ufeff{\"Controller\":\"Trading\",\"Topic\":\"Orders\"}",
		`{"Controller":"Market","Topic":"Echo",/*x*/"Controller":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo"}//{"Controller":"Trading"}`,
		`{'Controller':'Trading','Topic':'Orders'}`,
		`{Controller:"Trading",Topic:"Orders"}`,
		`{"Controller":"Market","Topic":"Echo",}`,
		`{"Controller":"Market","Topic":"Echo\ud800","Controller2":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","x":NaN,"Controller":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","x":Infinity}`,
		`{"Controller":"Market","Topic":"Echo","TransactionID":1e400}`,
		`{"Controller":"Market","Topic":"Echo","TransactionID":99999999999999999999}`,
		`{"Controller":"Market","Topic":"Echo","TransactionID":"1"}`,
		`{"Controller":"Trading","Topic":"Accounts","Action":"sub"}`,
		`{"Controller":["Trading"],"Topic":"Orders"}`,
		`{"Controller":{"$ref":"Trading"},"Topic":"Orders"}`,
		`{"Controller":"Market","Topic":"Echo","Data":` + strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001) + `}`,
	}
	for _, m := range msgs {
		if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	marker := `{"Controller":"Market","Topic":"Echo","TransactionID":424242}`
	if err := c.WriteMessage(websocket.TextMessage, []byte(marker)); err != nil {
		t.Fatal(err)
	}
	replies := 0
	for {
		got := readMsg(t, c)
		if got == marker {
			break
		}
		if !strings.Contains(got, `"Action":"Error"`) {
			t.Fatalf("reply not an Error: %s", got)
		}
		replies++
	}
	if replies != len(msgs) {
		t.Fatalf("%d Error replies to %d hostile messages", replies, len(msgs))
	}
	for _, m := range e.backend.received() {
		if m != marker {
			t.Fatalf("the backend received %.120q", m)
		}
	}
}

// TestRefusedMessageReplyKeepsItsTransactionID: through a session, the
// Error reply of a message refused for a variant of Controller carries its
// TransactionID, and not the ambiguous Controller.
func TestRefusedMessageReplyKeepsItsTransactionID(t *testing.T) {
	e := newTestEnv(t, nil)
	c := e.dial(bearer(tokDemo))
	got := roundTrip(t, c, `{"Controller":"Market","controller":"Trading","Topic":"QueryAccounts","TransactionID":44}`)
	if !strings.Contains(got, `"TransactionID":44`) || strings.Contains(got, "Trading") || strings.Contains(got, `"Market"`) ||
		!strings.Contains(got, `"Data":"Data.Deserialise"`) {
		t.Errorf("reply %s", got)
	}
}

// TestAttackPipelinedBehindAuth: one TCP write carries a Trading message,
// a refused AuthToken, another Trading message and an Echo: nothing of it
// is forwarded; then a good AuthToken with a message right behind it in
// the same write: the message behind it is forwarded (after the
// verification), the one before it is not.
func TestAttackPipelinedBehindAuth(t *testing.T) {
	e := newTestEnv(t, nil)
	c := afDial(t, e, "", 5*time.Second)
	if c.resp == nil || c.resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatal("no upgrade")
	}
	var burst []byte
	for _, m := range []string{
		`{"Controller":"Market","Topic":"Echo","TransactionID":1}`,
		`{"Controller":"Auth","Topic":"AuthToken","TransactionID":2,"Data":{"Provider":"Bearer","AccessToken":"forged"}}`,
		`{"Controller":"Market","Topic":"Echo","TransactionID":3}`,
		`{"Controller":"Auth","Topic":"AuthToken","TransactionID":4,"Data":{"Provider":"Bearer","AccessToken":"` + tokDemo + `"}}`,
		`{"Controller":"Market","Topic":"Echo","TransactionID":5}`,
	} {
		burst = append(burst, afFrame(0x80|websocket.TextMessage, []byte(m))...)
	}
	if _, err := c.Write(burst); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []string
	for len(got) < 5 {
		_, p, err := readFrame(c.br)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, string(p))
	}
	if !strings.Contains(got[0], `"Data":"Authority"`) || !strings.Contains(got[1], `"Reject"`) ||
		!strings.Contains(got[2], `"Data":"Authority"`) || !strings.Contains(got[3], `"Success"`) ||
		got[4] != `{"Controller":"Market","Topic":"Echo","TransactionID":5}` {
		t.Fatalf("replies %q", got)
	}
	if r := e.backend.received(); len(r) != 1 {
		t.Fatalf("backend received %q", r)
	}
}

// TestAttackHostileClientFrames: malformed frames close the socket with
// 1002 (or 1009 for a declared length over the limit, at once, before any
// payload), and nothing reaches the backend; a message fragmented with a
// ping between its fragments is authorized whole.
func TestAttackHostileClientFrames(t *testing.T) {
	echo := []byte(`{"Controller":"Market","Topic":"Echo"}`)
	tests := []struct {
		name    string
		deflate bool
		frames  func() []byte
		code    int
	}{
		{"RSV1 without permessage-deflate", false, func() []byte { return afFrame(0xc0|websocket.TextMessage, echo) }, websocket.CloseProtocolError},
		{"RSV2", true, func() []byte { return afFrame(0xa0|websocket.TextMessage, echo) }, websocket.CloseProtocolError},
		{"RSV3", true, func() []byte { return afFrame(0x90|websocket.TextMessage, echo) }, websocket.CloseProtocolError},
		{"unmasked", false, func() []byte {
			return append([]byte{0x80 | websocket.TextMessage, byte(len(echo))}, echo...)
		}, websocket.CloseProtocolError},
		{"continuation first", false, func() []byte { return afFrame(0x80, echo) }, websocket.CloseProtocolError},
		{"text inside a message", false, func() []byte {
			return append(afFrame(websocket.TextMessage, echo[:10]), afFrame(0x80|websocket.TextMessage, echo)...)
		}, websocket.CloseProtocolError},
		{"fragmented ping", false, func() []byte { return afFrame(websocket.PingMessage, nil) }, websocket.CloseProtocolError},
		{"ping over 125", false, func() []byte { return afFrame(0x80|websocket.PingMessage, make([]byte, 126)) }, websocket.CloseProtocolError},
		{"reserved opcode", false, func() []byte { return afFrame(0x80|0x3, echo) }, websocket.CloseProtocolError},
		{"close code 1005", false, func() []byte { return afFrame(0x80|websocket.CloseMessage, []byte{0x03, 0xed}) }, websocket.CloseProtocolError},
		{"huge declared length", false, func() []byte {
			return []byte{0x80 | websocket.TextMessage, 0x80 | 127, 0x3f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4}
		}, websocket.CloseMessageTooBig},
		{"64-bit length with its top bit", false, func() []byte {
			return []byte{0x80 | websocket.TextMessage, 0x80 | 127, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4}
		}, -2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, nil)
			ext := ""
			if tt.deflate {
				ext = "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover; server_no_context_takeover\r\n"
			}
			c := afDial(t, e, "Authorization: Bearer "+tokDemo+"\r\n"+ext, 5*time.Second)
			if c.resp == nil || c.resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatal("no upgrade")
			}
			if _, err := c.Write(tt.frames()); err != nil {
				t.Fatal(err)
			}
			got := afCloseCode(c, 3*time.Second)
			if tt.code == -2 { // closed, one way or another
				if got == 0 {
					t.Fatal("socket stayed open")
				}
			} else if got != tt.code {
				t.Fatalf("close code %d, want %d", got, tt.code)
			}
			time.Sleep(50 * time.Millisecond)
			if r := e.backend.received(); len(r) != 0 {
				t.Fatalf("backend received %q", r)
			}
		})
	}
	t.Run("fragments with a ping between", func(t *testing.T) {
		e := newTestEnv(t, nil)
		c := afDial(t, e, "Authorization: Bearer "+tokDemo+"\r\n", 5*time.Second)
		if c.resp == nil || c.resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatal("no upgrade")
		}
		// The first fragment alone reads as Market/Echo; the whole, with
		// its second Controller, is refused: the gateway decides on the
		// whole message, which is what the backend would get.
		var b []byte
		b = append(b, afFrame(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Echo"`))...)
		b = append(b, afFrame(0x80|websocket.PingMessage, []byte("p"))...)
		b = append(b, afFrame(0, []byte(`,"Controller":"Trading"`))...)
		b = append(b, afFrame(0x80, []byte(`,"Topic":"Orders"}`))...)
		b = append(b, afFrame(0x80|websocket.TextMessage, echo)...)
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var texts []string
		for len(texts) < 2 {
			b0, p, err := readFrame(c.br)
			if err != nil {
				t.Fatal(err)
			}
			if b0&0xf == websocket.TextMessage {
				texts = append(texts, string(p))
			}
		}
		if !strings.HasSuffix(texts[0], `"Data":"Data.Deserialise"}`) || texts[1] != string(echo) {
			t.Fatalf("replies %q", texts)
		}
		if r := e.backend.received(); len(r) != 1 || r[0] != string(echo) {
			t.Fatalf("backend received %q", r)
		}
	})
}

// TestAttackPreAuthSlowloris: an unauthenticated client that trickles a
// large message a few bytes at a time and pings meanwhile is closed at
// the auth deadline all the same, and its goroutines end.
func TestAttackPreAuthSlowloris(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Auth.Timeout = 500 * time.Millisecond })
	base := goroutines()
	const n = 16
	conns := make([]*afConn, n)
	for i := range conns {
		c := afDial(t, e, "", 5*time.Second)
		if c.resp == nil || c.resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatal("no upgrade")
		}
		conns[i] = c
		// A frame header for 512 KiB, then nothing but a trickle.
		hdr := wsframe.AppendHeader(nil, wsframe.FinalBit|websocket.TextMessage, 512<<10, []byte{0, 0, 0, 0})
		if _, err := c.Write(hdr); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range conns[:n/2] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if _, err := c.Write([]byte("{")); err != nil {
					return
				}
			}
		}()
	}
	closed := 0
	for _, c := range conns {
		// The gateway closes (its close frame, or the connection) by the
		// deadline plus CloseGrace.
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := io.Copy(io.Discard, c.br); err == nil || !isTimeout(err) {
			closed++
		}
	}
	close(stop)
	wg.Wait()
	if closed != n {
		t.Fatalf("%d of %d slow unauthenticated sockets closed within %v", closed, n, time.Since(start))
	}
	eventually(t, "the sessions to end", func() bool { return e.sessions() == 0 && e.gw.places.unauth.Load() == 0 })
	eventually(t, "goroutines back", func() bool { return goroutines() <= base+2 })
}

// TestAttackPreAuthPingFlood: pings do not extend an unauthenticated
// socket past its auth deadline.
func TestAttackPreAuthPingFlood(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Auth.Timeout = 400 * time.Millisecond })
	c := e.dial(nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			if c.WriteControl(websocket.PingMessage, []byte("x"), time.Now().Add(time.Second)) != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	if got := closeCode(t, c); got != websocket.ClosePolicyViolation {
		t.Fatalf("close code %d", got)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("closed after %v", d)
	}
	<-done
}

// TestAttackBackendCannotSmuggleFrames: a backend's frames that are not
// plain data frames (a reserved opcode, a masked frame, RSV1, a close
// with a code no endpoint may send) never reach the client as they are:
// the client gets 1011. A backend close with a 4xxx code is relayed as a
// code, without the backend's reason text.
func TestAttackBackendCannotSmuggleFrames(t *testing.T) {
	for _, tt := range []struct {
		name  string
		frame []byte
		code  int
	}{
		{"reserved opcode", rawFrame(true, 0x3, "x", 0), websocket.CloseInternalServerErr},
		{"masked", append([]byte{0x81, 0x81, 1, 2, 3, 4}, 'x'^1), websocket.CloseInternalServerErr},
		{"RSV1", rawFrame(true, websocket.TextMessage, "x", 0x40), websocket.CloseInternalServerErr},
		{"close 1005", rawFrame(true, websocket.CloseMessage, "\x03\xed", 0), websocket.CloseInternalServerErr},
		{"close 1015", rawFrame(true, websocket.CloseMessage, "\x03\xf7", 0), websocket.CloseInternalServerErr},
		{"close 4000 with a reason", rawFrame(true, websocket.CloseMessage, "\x0f\xa0secret-internal-detail", 0), 4000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := rawBackend(t, tt.frame, func(c net.Conn, br *bufio.Reader) { _, _ = io.Copy(io.Discard, br) })
			e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams = []string{url} })
			c := afDial(t, e, "Authorization: Bearer "+tokDemo+"\r\n", 5*time.Second)
			if c.resp == nil || c.resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatal("no upgrade")
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			for {
				b0, p, err := readFrame(c.br)
				if err != nil {
					t.Fatalf("no close frame: %v", err)
				}
				if b0 != 0x80|websocket.CloseMessage && b0 != 0x80|websocket.PingMessage {
					t.Fatalf("frame %#x %q reached the client", b0, p)
				}
				if b0&0xf == websocket.CloseMessage {
					if code := int(binary.BigEndian.Uint16(p)); code != tt.code || len(p) != 2 {
						t.Fatalf("close %d %q, want %d", code, p[2:], tt.code)
					}
					return
				}
			}
		})
	}
}

// TestAttackOddAuthorizationHeaders: the header forms an attacker might
// try get 403 without the backend being dialed; none of them, nor a
// refused AuthToken or AuthOwner, puts the secret into the logs.
func TestAttackOddAuthorizationHeaders(t *testing.T) {
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
		c := afDial(t, e, h, 5*time.Second)
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

// TestAttackOriginAndSubprotocol: cross-origin upgrades (another host, two
// Origin headers, a host with a suffix) are refused before the
// verifier is asked; a sub-protocol list without ServiceJson is refused.
func TestAttackOriginAndSubprotocol(t *testing.T) {
	e := newTestEnv(t, nil)
	host := e.srv.Listener.Addr().String()
	for _, tt := range []struct{ extra string }{
		{"Origin: http://evil.example\r\n"},
		{"Origin: http://" + host + ".evil.example\r\n"},
		{"Origin: http://" + host + "\r\nOrigin: http://evil.example\r\n"},
		{"Origin: null\r\n"},
		{"Origin: http://evil.example/" + host + "\r\n"},
	} {
		c := afDial(t, e, tt.extra+"Authorization: Bearer "+tokDemo+"\r\n", 5*time.Second)
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
		c := afDialPath(t, e, "/ws?"+q, "", 5*time.Second)
		if c.resp == nil || c.resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("?%s: %v", q, c.resp)
		}
		c.Close()
	}
}

// TestAttackH2StreamsPreAuth: over HTTP/2 extended CONNECT one TCP
// connection carries many WebSockets. Unauthenticated streams are counted
// against MaxUnauthenticated, and their source's sixteenth of it, like
// sockets (the ones over it get 503) and each is closed at the auth
// deadline. Re-runs itself with
// GODEBUG=http2xconnect=1.
func TestAttackH2StreamsPreAuth(t *testing.T) {
	if rerunWithXConnect(t, "TestAttackH2StreamsPreAuth") {
		return
	}
	const bound, streams = 3, 8
	e := newTestEnv(t, func(c *Config) { c.Auth.MaxUnauthenticated, c.Auth.Timeout = 16*bound, 400*time.Millisecond })
	fr, authority := h2Client(t, e)
	// Wait for the server's SETTINGS (extended CONNECT enabled).
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			_ = fr.WriteSettingsAck()
			break
		}
	}
	start := time.Now()
	for i := range streams {
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for _, f := range [][2]string{{":method", "CONNECT"}, {":protocol", "websocket"}, {":scheme", "https"},
			{":authority", authority}, {":path", "/ws?version=1.1"}, {"sec-websocket-version", "13"},
			{"sec-websocket-protocol", DefaultSubprotocol}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	status := map[uint32]string{}
	closedAt := map[uint32]time.Duration{}
	ended := map[uint32]bool{}
	for len(ended) < streams {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("read: %v (status %v, closed %v)", err, status, closedAt)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			status[f.StreamID] = f.PseudoValue("status")
			if f.StreamEnded() {
				ended[f.StreamID] = true
			}
		case *http2.DataFrame:
			if d := f.Data(); len(d) >= 4 && d[0] == 0x88 {
				closedAt[f.StreamID] = time.Since(start)
				code := int(binary.BigEndian.Uint16(d[2:]))
				if code != websocket.ClosePolicyViolation {
					t.Fatalf("stream %d closed with %d", f.StreamID, code)
				}
				// Answer the close, so the stream ends cleanly.
				_ = fr.WriteData(f.StreamID, false, []byte{0x88, 0x82, 0, 0, 0, 0, 0x03, 0xf0})
			}
			if f.StreamEnded() {
				ended[f.StreamID] = true
			}
			if n := len(f.Data()); n > 0 {
				_ = fr.WriteWindowUpdate(0, uint32(n))
				_ = fr.WriteWindowUpdate(f.StreamID, uint32(n))
			}
		case *http2.RSTStreamFrame:
			ended[f.StreamID] = true
		}
	}
	opened := 0
	for id, s := range status {
		switch s {
		case "200":
			opened++
			if d, ok := closedAt[id]; !ok || d > 2*time.Second {
				t.Fatalf("stream %d: closed at %v", id, d)
			}
		case "503":
		default:
			t.Fatalf("stream %d: status %s", id, s)
		}
	}
	if opened != bound {
		t.Fatalf("%d unauthenticated streams opened, bound %d (%v)", opened, bound, status)
	}
}
