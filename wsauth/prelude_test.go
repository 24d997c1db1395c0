package wsauth

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

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
	frame := handFrame(0x40|websocket.TextMessage, handDeflate(t, body)) // RSV1, text, no FIN: the message goes on
	c := handDial(t, e, "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover; server_no_context_takeover\r\n", 5*time.Second)
	if c.resp == nil || c.resp.StatusCode != http.StatusSwitchingProtocols ||
		!strings.Contains(c.resp.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate") {
		t.Fatal("no socket with permessage-deflate")
	}
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	if code := handCloseCode(c, 5*time.Second); code != websocket.CloseMessageTooBig {
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

// TestMessagesPipelinedAroundAuthToken: one TCP write carries a Trading
// message, a refused AuthToken, another Trading message and an Echo:
// nothing of it is forwarded; then a good AuthToken with a message right
// behind it in the same write: the message behind it is forwarded (after
// the verification), the one before it is not.
func TestMessagesPipelinedAroundAuthToken(t *testing.T) {
	e := newTestEnv(t, nil)
	c := handDial(t, e, "", 5*time.Second)
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
		burst = append(burst, handFrame(0x80|websocket.TextMessage, []byte(m))...)
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

// TestTricklingClientClosedAtAuthDeadline: an unauthenticated client that
// trickles a large message a few bytes at a time and pings meanwhile is
// closed at the auth deadline all the same, and its goroutines end.
func TestTricklingClientClosedAtAuthDeadline(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Auth.Timeout = 500 * time.Millisecond })
	base := goroutines()
	const n = 16
	conns := make([]*handConn, n)
	for i := range conns {
		c := handDial(t, e, "", 5*time.Second)
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

// TestPingsDoNotExtendTheAuthDeadline: pings do not extend an unauthenticated
// socket past its auth deadline.
func TestPingsDoNotExtendTheAuthDeadline(t *testing.T) {
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
