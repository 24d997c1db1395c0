package wsauth

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gorilla/websocket"
)

// TestMalformedClientFramesClose: malformed frames close the socket with
// 1002 (or 1009 for a declared length over the limit, at once, before any
// payload), and nothing reaches the backend; a message fragmented with a
// ping between its fragments is authorized whole.
func TestMalformedClientFramesClose(t *testing.T) {
	echo := []byte(`{"Controller":"Market","Topic":"Echo"}`)
	tests := []struct {
		name    string
		deflate bool
		frames  func() []byte
		code    int
	}{
		{"RSV1 without permessage-deflate", false, func() []byte { return handFrame(0xc0|websocket.TextMessage, echo) }, websocket.CloseProtocolError},
		{"RSV2", true, func() []byte { return handFrame(0xa0|websocket.TextMessage, echo) }, websocket.CloseProtocolError},
		{"RSV3", true, func() []byte { return handFrame(0x90|websocket.TextMessage, echo) }, websocket.CloseProtocolError},
		{"unmasked", false, func() []byte {
			return append([]byte{0x80 | websocket.TextMessage, byte(len(echo))}, echo...)
		}, websocket.CloseProtocolError},
		{"continuation first", false, func() []byte { return handFrame(0x80, echo) }, websocket.CloseProtocolError},
		{"text inside a message", false, func() []byte {
			return append(handFrame(websocket.TextMessage, echo[:10]), handFrame(0x80|websocket.TextMessage, echo)...)
		}, websocket.CloseProtocolError},
		{"fragmented ping", false, func() []byte { return handFrame(websocket.PingMessage, nil) }, websocket.CloseProtocolError},
		{"ping over 125", false, func() []byte { return handFrame(0x80|websocket.PingMessage, make([]byte, 126)) }, websocket.CloseProtocolError},
		{"reserved opcode", false, func() []byte { return handFrame(0x80|0x3, echo) }, websocket.CloseProtocolError},
		{"close code 1005", false, func() []byte { return handFrame(0x80|websocket.CloseMessage, []byte{0x03, 0xed}) }, websocket.CloseProtocolError},
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
			c := handDial(t, e, "Authorization: Bearer "+tokDemo+"\r\n"+ext, 5*time.Second)
			if c.resp == nil || c.resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatal("no upgrade")
			}
			if _, err := c.Write(tt.frames()); err != nil {
				t.Fatal(err)
			}
			got := handCloseCode(c, 3*time.Second)
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
		c := handDial(t, e, "Authorization: Bearer "+tokDemo+"\r\n", 5*time.Second)
		if c.resp == nil || c.resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatal("no upgrade")
		}
		// The first fragment alone reads as Market/Echo; the whole, with
		// its second Controller, is refused: the gateway decides on the
		// whole message, which is what the backend would get.
		var b []byte
		b = append(b, handFrame(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Echo"`))...)
		b = append(b, handFrame(0x80|websocket.PingMessage, []byte("p"))...)
		b = append(b, handFrame(0, []byte(`,"Controller":"Trading"`))...)
		b = append(b, handFrame(0x80, []byte(`,"Topic":"Orders"}`))...)
		b = append(b, handFrame(0x80|websocket.TextMessage, echo)...)
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

// TestReadCapped: the client reader's message buffer holds what the reader
// gave, limit bytes at most, and grows no further than the limit (with the
// allocator's rounding): a message of just over half the limit does not
// get a buffer of twice its size.
func TestReadCapped(t *testing.T) {
	const limit = 1<<20 + 1
	for _, n := range []int{0, 1, 511, 512, 513, 64 << 10, limit/2 + 1, limit - 1, limit, limit + 5} {
		for _, oneByte := range []bool{false, true} {
			if oneByte && n > 70_000 {
				continue
			}
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(i * 31)
			}
			var r io.Reader = bytes.NewReader(src)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			got, err := readCapped(nil, r, limit)
			if err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			want := src[:min(n, limit)]
			if !bytes.Equal(got, want) {
				t.Fatalf("%d bytes (one at a time %v): got %d bytes, want %d", n, oneByte, len(got), len(want))
			}
			if cap(got) > limit+limit/8 {
				t.Fatalf("%d bytes: a buffer of %d, past the limit %d", n, cap(got), limit)
			}
		}
	}
	// A large message costs its buffer and the small ones grown on the way,
	// not the megabyte of buffers doubling would leave.
	src := make([]byte, limit-1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := readCapped(nil, bytes.NewReader(src), limit); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if a := after.TotalAlloc - before.TotalAlloc; a > limit+limit/8+128<<10 && !raceEnabled {
		t.Fatalf("reading %d bytes allocated %d", len(src), a)
	}
}

// TestRefusedLargeMessagesMakeLittleGarbage: a client repeating a Sub whose
// topic is too large to keep gets an Error/Limited that echoes it each
// time; the gateway reuses its buffers (the message's, the topic's, the
// reply's) instead of making a topic's worth of garbage a message, which
// is what lets the heap stay near what a slow client may hold at all.
func TestRefusedLargeMessagesMakeLittleGarbage(t *testing.T) {
	e := newTestEnv(t, nil)
	c := e.dial(bearer(tokDemo))
	topic := "Security!" + strings.Repeat("X", 600<<10)
	msg := []byte(`{"Controller":"Market","Topic":"` + topic + `","Action":"Sub","TransactionID":7}`)
	round := func() {
		t.Helper()
		if err := c.WriteMessage(websocket.TextMessage, msg); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, r, err := c.NextReader()
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 64)
		n, _ := io.ReadFull(r, head)
		if !bytes.HasPrefix(head[:n], []byte(`{"Controller":"Market","Topic":"Security!XXX`)) {
			t.Fatalf("reply %q…, want the Error echoing the topic", head[:n])
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		round()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const rounds = 30
	for range rounds {
		round()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / rounds; per > uint64(len(topic))/4 && !raceEnabled {
		t.Fatalf("%d bytes allocated per refused %d-byte message", per, len(msg))
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.limited[LimitSubscriptions] }); n < rounds {
		t.Fatalf("%d refusals counted, want %d or more", n, rounds)
	}
}

// TestNonReadingSenderIsNotRead: a client that sends large messages and
// reads nothing stops being read once its queue lacks room for another
// reply besides what the reader holds: the reader never waits with a reply
// beyond the queue (before, it read on, and each time its queue was full
// it held the reply it could not queue, for write_timeout), and the
// session is closed as slow once the queue stops moving.
func TestNonReadingSenderIsNotRead(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.Transport.SendQueueBytes, c.Transport.WriteTimeout = 4<<20, time.Second
	})
	c := e.dial(bearer(tokDemo))
	msg := []byte(`{"Controller":"Market","Topic":"Security!` + strings.Repeat("X", 600<<10) + `","Action":"Sub","TransactionID":7}`)
	go func() {
		for {
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if c.WriteMessage(websocket.TextMessage, msg) != nil {
				return
			}
		}
	}()
	var s *session
	eventually(t, "the session", func() bool {
		e.gw.mu.Lock()
		defer e.gw.mu.Unlock()
		for x := range e.gw.sessions {
			s = x
		}
		return s != nil
	})
	eventually(t, "the slow client to be closed", func() bool {
		return e.metrics.get(func(m *fakeMetrics) int { return m.slow }) == 1
	})
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.limited[LimitSubscriptions] }); n < 2 {
		t.Fatalf("%d messages refused before the close: the scenario did not run", n)
	}
	if n := s.in.replyWaits.Load(); n != 0 {
		t.Fatalf("the client reader waited %d times with a reply beyond the queue", n)
	}
}
