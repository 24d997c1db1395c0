package wsframe

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStreamAnswers200: the Upgrader's 101, written to a stream in
// pieces, becomes the stream's 200 with the sub-protocol and extensions
// it named and nothing else of it; the frames after it, in the same Write
// or later ones, are the response's body, flushed. Reads are the
// request body's; the peer's address is the request's.
func TestStreamAnswers200(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewStream(rec, io.NopCloser(strings.NewReader("\x81\x82")), "192.0.2.7:443")
	for _, p := range []string{
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n",
		"Sec-WebSocket-Accept: x\r\nSec-WebSocket-Protocol: zenith\r\n",
		"Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover\r\n\r\n\x81\x02hi",
		"\x82\x01!",
	} {
		if n, err := s.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write %q: %d, %v", p, n, err)
		}
	}
	if rec.Code != http.StatusOK || !rec.Flushed {
		t.Fatalf("status %d, flushed %v", rec.Code, rec.Flushed)
	}
	h := rec.Header()
	if h.Get("Sec-WebSocket-Protocol") != "zenith" || h.Get("Sec-WebSocket-Extensions") != "permessage-deflate; server_no_context_takeover" ||
		h.Get("Upgrade") != "" || h.Get("Sec-WebSocket-Accept") != "" {
		t.Fatalf("the 200's header: %v", h)
	}
	if got := rec.Body.String(); got != "\x81\x02hi\x82\x01!" {
		t.Fatalf("body %q", got)
	}
	if b, err := io.ReadAll(s); err != nil || string(b) != "\x81\x82" {
		t.Fatalf("read %q, %v", b, err)
	}
	if a := s.RemoteAddr(); a.String() != "192.0.2.7:443" || a.Network() != "stream" {
		t.Fatalf("remote address %v (%s)", a, a.Network())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStreamAnswerBounded: an answer that runs past maxHandshakeResponse
// without its end fails the Write, and nothing is sent.
func TestStreamAnswerBounded(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewStream(rec, io.NopCloser(strings.NewReader("")), "")
	line := "X-Pad: " + strings.Repeat("p", 100) + "\r\n"
	written, err := 0, error(nil)
	for err == nil && written < 100*len(line) {
		_, err = s.Write([]byte(line))
		written += len(line)
	}
	if !errors.Is(err, errHandshakeTooLong) || written > maxHandshakeResponse+len(line) || rec.Body.Len() != 0 || rec.Flushed {
		t.Fatalf("after %d bytes: %v, %d bytes sent", written, err, rec.Body.Len())
	}
}
