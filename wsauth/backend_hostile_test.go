package wsauth

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// What a hostile or broken backend can do to the gateway: every byte of
// the backend leg under its control.

// hostileBackend accepts one connection, reads the upgrade request, and
// hands the connection to run, which answers it as it likes (accept is the
// Sec-WebSocket-Accept the request calls for). Its URL is returned.
func hostileBackend(t *testing.T, run func(c net.Conn, br *bufio.Reader, accept string)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		run(c, br, base64.StdEncoding.EncodeToString(h[:]))
	}()
	return "ws://" + l.Addr().String() + "/zenith"
}

func switching(accept, extra string) string {
	return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n" + extra + "\r\n"
}

// TestBackendUpgradeAnswerBounded: a backend whose answer to the upgrade
// never ends (header lines without end, or one line without end) fails the
// dial once it has sent wsframe.MaxUpgradeAnswer bytes, long before the dial
// timeout, and the client is closed with 1013 as for any failed dial.
// It failed when: nothing bounded the answer (gorilla buffered it all
// until the dial timeout: 1 GB within 5 s).
func TestBackendUpgradeAnswerBounded(t *testing.T) {
	for _, tt := range []struct {
		name string
		line func(i int) string
	}{
		{"header lines without end", func(i int) string { return "X-Pad: " + strings.Repeat("p", 100) + "\r\n" }},
		{"one line without end", func(int) string { return strings.Repeat("q", 1000) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var sent atomic.Int64
			url := hostileBackend(t, func(c net.Conn, _ *bufio.Reader, accept string) {
				head := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n"
				if _, err := c.Write([]byte(head)); err != nil {
					return
				}
				for i := range 1 << 20 { // 100 MB at most
					_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
					n, err := c.Write([]byte(tt.line(i)))
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
			})
			e := newTestEnv(t, func(c *Config) {
				c.Backend.Upstreams = []string{url}
				c.Backend.DialTimeout = 20 * time.Second
			})
			start := time.Now()
			c := e.dial(bearer(tokDemo))
			if code := closeCode(t, c); code != websocket.CloseTryAgainLater {
				t.Errorf("client close %d, want 1013", code)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the dial failed after %v: the answer was read until the dial timeout", d)
			}
			found := false
			for _, l := range e.logs.FilterMessage("ws backend dial failed").All() {
				if err, ok := l.ContextMap()["error"].(string); ok && strings.Contains(err, wsframe.ErrUpgradeAnswer.Error()) {
					found = true
				}
			}
			if !found {
				for _, l := range e.logs.All() {
					t.Logf("%s %v", l.Message, l.ContextMap())
				}
				t.Errorf("no dial failure naming the answer's bound in the log (the backend sent %d bytes)", sent.Load())
			}
		})
	}
}

// TestBackendUpgradeAnswerChecked: a 101 naming an extension the gateway
// did not offer, or a sub-protocol it did not ask for, fails the dial: the
// client is closed with 1011 and the backend leg is not used.
// It failed when: gorilla's Dialer accepted both.
func TestBackendUpgradeAnswerChecked(t *testing.T) {
	for _, tt := range []struct{ name, extra string }{
		{"permessage-deflate not offered", "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n"},
		{"unknown extension", "Sec-WebSocket-Extensions: x-webkit-deflate-frame\r\n"},
		{"sub-protocol not asked for", "Sec-WebSocket-Protocol: chat\r\n"},
		{"two sub-protocols", "Sec-WebSocket-Protocol: " + DefaultSubprotocol + "\r\nSec-WebSocket-Protocol: chat\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := hostileBackend(t, func(c net.Conn, br *bufio.Reader, accept string) {
				_, _ = c.Write([]byte(switching(accept, tt.extra)))
				_, _ = c.Write(rawFrame(true, 1, `{"Controller":"Zenith","Topic":"Hello"}`, 0))
				_, _ = br.ReadByte() // until the gateway hangs up
			})
			e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams = []string{url} })
			c := e.dial(bearer(tokDemo))
			if code := closeCode(t, c); code != websocket.CloseInternalServerErr {
				t.Errorf("client close %d, want 1011", code)
			}
			if e.logs.FilterMessage("ws backend dial failed").Len() != 1 {
				t.Errorf("the refused answer was not logged")
			}
		})
	}
	t.Run("the asked sub-protocol, or none", func(t *testing.T) {
		for _, extra := range []string{"Sec-WebSocket-Protocol: " + DefaultSubprotocol + "\r\n", ""} {
			url := hostileBackend(t, func(c net.Conn, br *bufio.Reader, accept string) {
				_, _ = c.Write([]byte(switching(accept, extra)))
				_, _ = c.Write(rawFrame(true, 1, `{"Controller":"Zenith","Topic":"Hello"}`, 0))
				_, _ = br.ReadByte()
			})
			e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams = []string{url} })
			c := e.dial(bearer(tokDemo))
			if m := readMsg(t, c); !strings.Contains(m, "Hello") {
				t.Fatalf("got %q", m)
			}
		}
	})
}

// TestBackendInvalidUTF8: a backend text message that is not valid UTF-8,
// whole in a run of frames, alone, in fragments, or read whole on the
// scratch path (the client's deflate on), never reaches the client: the
// backend gets 1007, the client 1011 after the valid messages before it.
// It failed when: the gateway relayed text without checking it (the
// client's conforming reader then dropped with 1006).
func TestBackendInvalidUTF8(t *testing.T) {
	good := `{"Controller":"Market","Topic":"Security!BHP.ASX","Data":"€"}`
	bad := "{\"Data\":\"\xff\xfe\"}"
	for _, tt := range []struct {
		name    string
		frames  []byte
		deflate bool
	}{
		{"in a run", append(rawFrame(true, 1, good, 0), rawFrame(true, 1, bad, 0)...), false},
		{"alone", rawFrame(true, 1, bad, 0), false},
		{"cut in a rune", append(rawFrame(false, 1, good[:len(good)-5], 0), rawFrame(true, 0, "\xe2\x82", 0)...), false},
		{"fragments", append(rawFrame(false, 1, "{\"Data\":\"", 0), rawFrame(true, 0, "\xc0\xaf\"}", 0)...), false},
		{"deflate", append(rawFrame(true, 1, good, 0), rawFrame(true, 1, bad, 0)...), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan []byte, 1)
			url := rawBackend(t, nil, func(c net.Conn, br *bufio.Reader) {
				_, _ = c.Write(tt.frames)
				p, _ := backendGets(br, websocket.CloseMessage)
				got <- p
			})
			e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams = []string{url} })
			d := &websocket.Dialer{Subprotocols: []string{DefaultSubprotocol}, EnableCompression: tt.deflate}
			c, _, err := e.tryDial(bearer(tokDemo), d)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if strings.HasPrefix(string(tt.frames[2:]), good) {
				if m := readMsg(t, c); m != good {
					t.Fatalf("client got %q", m)
				}
			}
			if code := closeCode(t, c); code != websocket.CloseInternalServerErr {
				t.Errorf("client close %d, want 1011", code)
			}
			select {
			case p := <-got:
				if len(p) < 2 || binary.BigEndian.Uint16(p) != websocket.CloseInvalidFramePayloadData {
					t.Errorf("backend got close %q, want 1007", p)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the backend got no close")
			}
		})
	}
}

// TestBackendCloseCodes: a backend's close reaches the client as the
// table has it (clientCloseCode): a protocol error the client did not
// make, a code only clients send, or 1014 (which gorilla's client refuses
// to receive) is 1011.
// It failed when: 1002 and 1010 reached the client as they were.
func TestBackendCloseCodes(t *testing.T) {
	for _, tt := range []struct{ backend, client int }{
		{1000, 1000}, {1001, 1001}, {1002, 1011}, {1003, 1003}, {1007, 1007}, {1008, 1008}, {1009, 1009},
		{1010, 1011}, {1011, 1011}, {1012, 1012}, {1013, 1013}, {1014, 1011}, {3000, 3000}, {4999, 4999},
		{1004, 1011}, {1015, 1011}, {2000, 1011}, {5000, 1011},
	} {
		t.Run(strconv.Itoa(tt.backend), func(t *testing.T) {
			var payload [2]byte
			binary.BigEndian.PutUint16(payload[:], uint16(tt.backend))
			url := rawBackend(t, rawFrame(true, 8, string(payload[:]), 0), func(c net.Conn, br *bufio.Reader) {
				_, _ = backendGets(br, websocket.CloseMessage)
			})
			e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams = []string{url} })
			c := e.dial(bearer(tokDemo))
			if code := closeCode(t, c); code != tt.client {
				t.Errorf("backend close %d: client got %d, want %d", tt.backend, code, tt.client)
			}
		})
	}
}

// pongingBackend answers every ping with a pong, ignores the rest, and
// sends what send gives it, when it gives it. It ends when the gateway
// hangs up; pings counts the pings it got.
func pongingBackend(t *testing.T, send <-chan []byte, pings *atomic.Int64) string {
	return rawBackend(t, nil, func(c net.Conn, br *bufio.Reader) {
		go func() {
			for b := range send {
				if _, err := c.Write(b); err != nil {
					return
				}
			}
		}()
		for {
			b0, p, err := readFrame(br)
			if err != nil {
				return
			}
			switch b0 & 0xf {
			case websocket.PingMessage:
				pings.Add(1)
				if _, err := c.Write(rawFrame(true, websocket.PongMessage, string(p), 0)); err != nil {
					return
				}
			case websocket.CloseMessage:
				return
			}
		}
	})
}

// TestBackendKeepAlive: the gateway pings the backend leg every
// PingInterval; a backend that answers stays however long it says
// nothing; one that stops answering is lost after IdleTimeout (1011 to the
// client); one that stalls mid-message, its pongs still coming, is lost
// after Backend.MessageTimeout.
// It failed when: the gateway never pinged the backend and had no read
// deadline on that leg (a stalled backend held the session until the
// client left).
func TestBackendKeepAlive(t *testing.T) {
	t.Parallel() // an env of its own in each subtest, each mostly waiting
	timing := func(c *Config) {
		c.Transport.PingInterval = 200 * time.Millisecond
		c.Transport.IdleTimeout = time.Second
		c.Backend.MessageTimeout = 1500 * time.Millisecond
	}
	t.Run("answers", func(t *testing.T) {
		t.Parallel()
		var pings atomic.Int64
		send := make(chan []byte, 1)
		defer close(send)
		url := pongingBackend(t, send, &pings)
		e := newTestEnv(t, func(c *Config) { timing(c); c.Backend.Upstreams = []string{url} })
		c := e.dial(bearer(tokDemo))
		go func() { // the client answers the gateway's pings (gorilla's reader does)
			for {
				if _, _, err := c.NextReader(); err != nil {
					return
				}
			}
		}()
		time.Sleep(2500 * time.Millisecond) // past idle_timeout twice
		if n := pings.Load(); n < 4 {
			t.Errorf("the backend got %d pings in 2.5 s at a 200 ms interval", n)
		}
		if e.logs.FilterMessage("ws backend leg failed").Len() != 0 {
			t.Errorf("a backend that answers its pings was lost")
		}
	})
	t.Run("stops answering", func(t *testing.T) {
		t.Parallel()
		url := rawBackend(t, nil, func(c net.Conn, br *bufio.Reader) {
			time.Sleep(7 * time.Second) // reads nothing, sends nothing
		})
		e := newTestEnv(t, func(c *Config) { timing(c); c.Backend.Upstreams = []string{url} })
		c := e.dial(bearer(tokDemo))
		start := time.Now()
		if code := closeCode(t, c); code != websocket.CloseInternalServerErr {
			t.Errorf("client close %d, want 1011", code)
		}
		if d := time.Since(start); d < 700*time.Millisecond || d > 5*time.Second {
			t.Errorf("a silent backend was lost after %v, idle_timeout is 1s", d)
		}
	})
	t.Run("stalls mid-message", func(t *testing.T) {
		t.Parallel()
		var pings atomic.Int64
		send := make(chan []byte, 1)
		defer close(send)
		url := pongingBackend(t, send, &pings)
		e := newTestEnv(t, func(c *Config) { timing(c); c.Backend.Upstreams = []string{url} })
		c := e.dial(bearer(tokDemo))
		// A 1 MB message's first frame, then nothing but pongs.
		send <- append([]byte{0x01, 127}, binary.BigEndian.AppendUint64(nil, 1<<20)...)
		start := time.Now()
		if code := closeCode(t, c); code != websocket.CloseInternalServerErr {
			t.Errorf("client close %d, want 1011", code)
		}
		if d := time.Since(start); d < time.Second || d > 6*time.Second {
			t.Errorf("a stalled message ended the leg after %v, backend_message_timeout is 1.5s", d)
		}
		if pings.Load() == 0 {
			t.Errorf("the backend was never pinged")
		}
	})
}

// TestBackendCannotSmuggleFrames: a backend's frames that are not
// plain data frames (a reserved opcode, a masked frame, RSV1, a close
// with a code no endpoint may send) never reach the client as they are:
// the client gets 1011. A backend close with a 4xxx code is relayed as a
// code, without the backend's reason text.
func TestBackendCannotSmuggleFrames(t *testing.T) {
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
			c := handDial(t, e, "Authorization: Bearer "+tokDemo+"\r\n", 5*time.Second)
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
