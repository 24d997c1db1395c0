package wsauth

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// deflateAccepted is the answer of a backend accepting the gateway's
// offer of permessage-deflate as gorilla's Upgrader does.
const deflateAccepted = "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n"

// deflatingBackend answers the upgrade with the extension lines ext (none
// when empty), sends frames, and reports the payload of the close frame
// the gateway sends it (nil when the gateway hangs up without one).
func deflatingBackend(t *testing.T, ext string, frames []byte) (url string, closed <-chan []byte) {
	t.Helper()
	got := make(chan []byte, 1)
	url = hostileBackend(t, func(c net.Conn, br *bufio.Reader, accept string) {
		if _, err := c.Write(append([]byte(switching(accept, ext)), frames...)); err != nil {
			got <- nil
			return
		}
		p, _ := backendGets(br, websocket.CloseMessage)
		got <- p
	})
	return url, got
}

// zFrame is a backend frame holding z, a compressed payload (RSV1 set
// when first), FIN set when fin.
func zFrame(fin, first bool, op byte, z []byte) []byte {
	var b0 byte
	if first {
		b0 = wsframe.RSV1Bit
	}
	return rawFrame(fin, op, string(z), b0)
}

// sentFrame is a frame the client read: its first byte and payload.
type sentFrame struct {
	b0      byte
	payload []byte
}

// sent are the frames rec read after the 101.
func (r *rawReads) sent(t *testing.T) []sentFrame {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	_, b, ok := bytes.Cut(r.got, []byte("\r\n\r\n"))
	if !ok {
		t.Fatal("no 101 read")
	}
	var frames []sentFrame
	br := bufio.NewReader(bytes.NewReader(b))
	for {
		b0, p, err := readFrame(br)
		if err != nil {
			return frames
		}
		frames = append(frames, sentFrame{b0, p})
	}
}

// hexText is n pseudo-random hex digits: text that compresses to about
// half, with no repeat a compressor finds.
func hexText(n int) string {
	r := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, n)
	for i := range b {
		b[i] = "0123456789abcdef"[r.IntN(16)]
	}
	return `{"Controller":"Market","Topic":"Blob","Data":"` + string(b) + `"}`
}

// TestBackendCompressedPassedThrough: with Backend.Compression, the
// backend's compressed messages reach a client that negotiated
// permessage-deflate as the backend compressed them, byte for byte, RSV1
// set: whole in the reader's buffer, in fragments (their payloads joined
// in one frame), larger than a batch (queued), binary; a message the
// backend sent uncompressed is decided as before (a short one goes as it
// is). A client without permessage-deflate reads every message
// decompressed, RSV1 clear. Every message reads back as the backend
// meant it (gorilla's client decompresses). It failed with passes always
// false (the client got each compressed message decompressed, a
// payload of its own).
func TestBackendCompressedPassedThrough(t *testing.T) {
	long := strings.Repeat(marketQuote, 4)
	big := hexText(300 << 10) // compressed, larger than a batch
	type sent struct {
		op   byte
		msg  string
		z    []byte // its compressed payload; nil: sent uncompressed
		pass bool   // to pass on compressed to a client that deflates
	}
	zq, zl, zb := handDeflate(t, []byte(marketQuote)), handDeflate(t, []byte(long)), handDeflate(t, []byte(big))
	msgs := []sent{
		{websocket.TextMessage, marketQuote, zq, true},
		{websocket.TextMessage, `{"Controller":"Zenith","Topic":"Short"}`, nil, false},
		{websocket.TextMessage, long, zl, true},
		{websocket.TextMessage, big, zb, true},
		{websocket.BinaryMessage, marketQuote, zq, true},
	}
	var frames []byte
	frames = append(frames, zFrame(true, true, websocket.TextMessage, zq)...)
	frames = append(frames, rawFrame(true, websocket.TextMessage, msgs[1].msg, 0)...)
	frames = append(frames, zFrame(false, true, websocket.TextMessage, zl[:40])...)
	frames = append(frames, rawFrame(true, websocket.PingMessage, "", 0)...)
	frames = append(frames, zFrame(true, false, 0, zl[40:])...)
	frames = append(frames, zFrame(true, true, websocket.TextMessage, zb)...)
	frames = append(frames, zFrame(true, true, websocket.BinaryMessage, zq)...)
	if len(zb) <= wsframe.BatchBytes || len(zb) >= len(big) {
		t.Fatalf("the big message compresses to %d bytes", len(zb))
	}
	for _, deflate := range []bool{true, false} {
		t.Run(fmt.Sprintf("client deflate %v", deflate), func(t *testing.T) {
			url, _ := deflatingBackend(t, deflateAccepted, frames)
			e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams, c.Backend.Compression = []string{url}, true })
			var rec *rawReads
			d := compressingDialer(&rec)
			d.EnableCompression = deflate
			c, _, err := e.tryDial(bearer(tokDemo), d)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for i, m := range msgs {
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				typ, data, err := c.ReadMessage()
				if err != nil || typ != int(m.op) || string(data) != m.msg {
					t.Fatalf("message %d: type %d, %.40q (%v)", i, typ, data, err)
				}
			}
			got := rec.sent(t)
			if len(got) < len(msgs) {
				t.Fatalf("%d frames, want %d", len(got), len(msgs))
			}
			for i, m := range msgs {
				f := got[i]
				passed := f.b0&wsframe.RSV1Bit != 0 && bytes.Equal(f.payload, m.z)
				if want := deflate && m.pass; passed != want || f.b0&0xf != m.op {
					t.Errorf("message %d: first byte %#x, passed on compressed %v, want %v", i, f.b0, passed, want)
				}
				if !deflate && f.b0&wsframe.RSV1Bit != 0 {
					t.Errorf("message %d compressed to a client without permessage-deflate", i)
				}
			}
		})
	}
}

// TestBackendCompressedWindow: a client that asked for a smaller server
// window (server_max_window_bits=9: 512 bytes) is passed the backend's
// compressed messages only where no back-reference can exceed it: one
// of 512 bytes at most, or any when the backend declared a window no
// larger; else it reads the message decompressed (and, past its window,
// not compressed again). It failed with the window left out of passes.
func TestBackendCompressedWindow(t *testing.T) {
	short, long := marketQuote, strings.Repeat(marketQuote, 8)
	frames := append(zFrame(true, true, websocket.TextMessage, handDeflate(t, []byte(short))), zFrame(true, true, websocket.TextMessage, handDeflate(t, []byte(long)))...)
	for _, tt := range []struct {
		name     string
		ext      string
		longPass bool
	}{
		{"the backend's window 32 KiB", deflateAccepted, false},
		{"the backend's window 512 bytes", strings.TrimSuffix(deflateAccepted, "\r\n") + "; server_max_window_bits=9\r\n", true},
		{"the backend's window 256 bytes", strings.TrimSuffix(deflateAccepted, "\r\n") + "; server_max_window_bits=8\r\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, _ := deflatingBackend(t, tt.ext, frames)
			e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams, c.Backend.Compression = []string{url}, true })
			hc := handDial(t, e, "Authorization: Bearer "+tokDemo+"\r\nSec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=9\r\n", 5*time.Second)
			if hc.resp == nil || hc.resp.StatusCode != 101 {
				t.Fatal("no 101")
			}
			_ = hc.SetReadDeadline(time.Now().Add(10 * time.Second))
			for i, m := range []struct {
				msg  string
				pass bool
			}{{short, true}, {long, tt.longPass}} {
				b0, p, err := readFrame(hc.br)
				if err != nil {
					t.Fatal(err)
				}
				z := b0&wsframe.RSV1Bit != 0
				if z != m.pass || !z && string(p) != m.msg || z && !bytes.Equal(p, handDeflate(t, []byte(m.msg))) {
					t.Fatalf("message %d: first byte %#x, %d bytes; want passed on compressed %v", i, b0, len(p), m.pass)
				}
			}
		})
	}
}

// TestBackendDeflateAnswerChecked: with Backend.Compression, the
// backend's answer must accept the offer made (RFC 7692 §5, §7): with
// server_no_context_takeover, no parameter the offer did not name, a
// window of 8 to 15 bits, no parameter twice, one extension; else the
// dial fails and the client gets 1011. A backend that declines (no
// extension), or accepts with a smaller window, serves the client. It
// failed with acceptedDeflate taking any answer (but context takeover,
// which gorilla's Dialer refuses before it).
func TestBackendDeflateAnswerChecked(t *testing.T) {
	ext := func(params string) string { return "Sec-WebSocket-Extensions: permessage-deflate" + params + "\r\n" }
	for _, tt := range []struct {
		name, ext string
		ok        bool
	}{
		{"accepted", deflateAccepted, true},
		{"declined", "", true},
		{"a smaller window", ext("; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10"), true},
		{"a quoted window", ext(`; server_no_context_takeover; client_no_context_takeover; server_max_window_bits="10"`), true},
		{"context takeover", ext("; client_no_context_takeover"), false},
		{"client_max_window_bits not offered", ext("; server_no_context_takeover; client_no_context_takeover; client_max_window_bits=10"), false},
		{"a window of 16 bits", ext("; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=16"), false},
		{"a window with a leading zero", ext("; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=09"), false},
		{"a window without bits", ext("; server_no_context_takeover; client_no_context_takeover; server_max_window_bits"), false},
		{"a parameter twice", ext("; server_no_context_takeover; client_no_context_takeover; server_no_context_takeover"), false},
		{"a value where none goes", ext("; server_no_context_takeover=1; client_no_context_takeover"), false},
		{"an unknown parameter", ext("; server_no_context_takeover; client_no_context_takeover; x=1"), false},
		{"twice", ext("; server_no_context_takeover; client_no_context_takeover, permessage-deflate; server_no_context_takeover; client_no_context_takeover"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hello := `{"Controller":"Zenith","Topic":"Hello"}`
			url, _ := deflatingBackend(t, tt.ext, rawFrame(true, websocket.TextMessage, hello, 0))
			e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams, c.Backend.Compression = []string{url}, true })
			c := e.dial(bearer(tokDemo))
			if !tt.ok {
				if code := closeCode(t, c); code != websocket.CloseInternalServerErr {
					t.Errorf("client close %d, want 1011", code)
				}
				if e.logs.FilterMessage("ws backend dial failed").Len() != 1 {
					t.Errorf("the refused answer was not logged")
				}
				return
			}
			if m := readMsg(t, c); m != hello {
				t.Fatalf("got %q", m)
			}
		})
	}
}

// TestBackendRSV1Refused: a compressed frame (RSV1) from a backend leg
// that did not negotiate permessage-deflate (the gateway did not offer
// it, or the backend declined) closes the leg as a protocol error, 1002,
// and the client with 1011, as before; so does RSV1 on a continuation or
// a control frame where it was negotiated (RFC 7692 §6.1), and a
// compressed message that does not decompress, or a compressed text
// message that is not valid UTF-8, is 1007. It failed with
// ParseDeflateHeader used whatever the leg negotiated, and with the UTF-8
// check left out of relayCompressed.
func TestBackendRSV1Refused(t *testing.T) {
	z := handDeflate(t, []byte(marketQuote))
	for _, tt := range []struct {
		name     string
		offer    bool
		ext      string
		frames   []byte
		backend  int
		compress bool
	}{
		{"not offered", false, "", zFrame(true, true, websocket.TextMessage, z), websocket.CloseProtocolError, false},
		{"declined", true, "", zFrame(true, true, websocket.TextMessage, z), websocket.CloseProtocolError, false},
		{"on a continuation", true, deflateAccepted, append(zFrame(false, true, websocket.TextMessage, z[:10]), zFrame(true, true, 0, z[10:])...), websocket.CloseProtocolError, true},
		{"on a ping", true, deflateAccepted, rawFrame(true, websocket.PingMessage, "", wsframe.RSV1Bit), websocket.CloseProtocolError, true},
		{"not deflate", true, deflateAccepted, zFrame(true, true, websocket.TextMessage, []byte{0xff, 0xff, 0xff}), websocket.CloseInvalidFramePayloadData, true},
		{"text not UTF-8", true, deflateAccepted, zFrame(true, true, websocket.TextMessage, handDeflate(t, []byte("{\"Data\":\"\xff\xfe\"}"))), websocket.CloseInvalidFramePayloadData, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, closed := deflatingBackend(t, tt.ext, tt.frames)
			e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams, c.Backend.Compression = []string{url}, tt.offer })
			c := e.dial(bearer(tokDemo))
			if code := closeCode(t, c); code != websocket.CloseInternalServerErr {
				t.Errorf("client close %d, want 1011", code)
			}
			backendClose(t, closed, tt.backend)
		})
	}
}

// backendClose fails t unless the backend got a close frame with code
// within 5 s.
func backendClose(t *testing.T, closed <-chan []byte, code int) {
	t.Helper()
	select {
	case p := <-closed:
		if len(p) < 2 || int(binary.BigEndian.Uint16(p)) != code {
			t.Errorf("backend got close %q, want %d", p, code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the backend got no close")
	}
}

// TestBackendDecompressionBomb: Backend.MaxMessageBytes bounds a
// compressed message as decompressed: a few KiB that decompress to 4 MiB,
// past a bound of 1 MiB, close the backend leg with 1009 and the client
// with 1011, as any message over the bound, after the messages before it;
// whole in the reader's buffer, in fragments, and through gorilla's
// reader (a backend leg the session does not read itself: TLS). It failed
// with Inflate given no bound, and on gorilla's reader with readAll
// unbounded (the 4 MiB relayed, both times).
func TestBackendDecompressionBomb(t *testing.T) {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestCompression)
	_, _ = w.Write(bytes.Repeat([]byte("0"), 4<<20))
	_ = w.Flush()
	bomb := bytes.TrimSuffix(b.Bytes(), []byte{0, 0, 0xff, 0xff})
	if len(bomb) > 16<<10 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	first := zFrame(true, true, websocket.TextMessage, handDeflate(t, []byte(marketQuote)))
	for _, tt := range []struct {
		name    string
		frames  []byte
		gorilla bool
	}{
		{"whole", append(first, zFrame(true, true, websocket.TextMessage, bomb)...), false},
		{"in fragments", append(first, append(zFrame(false, true, websocket.TextMessage, bomb[:100]), zFrame(true, false, 0, bomb[100:])...)...), false},
		{"through gorilla's reader", append(first, zFrame(true, true, websocket.TextMessage, bomb)...), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, closed := deflatingBackend(t, deflateAccepted, tt.frames)
			e := newTestEnv(t, func(c *Config) {
				c.Backend.Upstreams, c.Backend.Compression, c.Backend.MaxMessageBytes = []string{url}, true, 1<<20
			})
			if tt.gorilla {
				// Not a *net.TCPConn: the session leaves the frames to
				// gorilla's reader (backendLoop), as on a TLS leg.
				e.gw.dialer.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return wsframe.NewClient(struct{ net.Conn }{c}, 5*time.Second), nil
				}
			}
			c := e.dial(bearer(tokDemo))
			if m := readMsg(t, c); m != marketQuote {
				t.Fatalf("got %.40q", m)
			}
			if code := closeCode(t, c); code != websocket.CloseInternalServerErr {
				t.Errorf("client close %d, want 1011", code)
			}
			backendClose(t, closed, websocket.CloseMessageTooBig)
		})
	}
}
