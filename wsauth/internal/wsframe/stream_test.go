package wsframe

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// releasedWriter is a ResponseWriter that, like Go's HTTP/2 server once
// the handler has returned, must not be touched after release: a call
// then is counted as the server's nil dereference would crash it.
type releasedWriter struct {
	*httptest.ResponseRecorder
	released atomic.Bool
	late     atomic.Int32
}

func (w *releasedWriter) touch() {
	if w.released.Load() {
		w.late.Add(1)
	}
}

func (w *releasedWriter) Write(p []byte) (int, error) { w.touch(); return w.ResponseRecorder.Write(p) }
func (w *releasedWriter) Flush()                      { w.touch() }
func (w *releasedWriter) SetReadDeadline(time.Time) error {
	w.touch()
	return nil
}
func (w *releasedWriter) SetWriteDeadline(time.Time) error {
	w.touch()
	return nil
}

// TestStreamEndedIsNotTouched: closes that race the handler's return (a
// drain's closeClient, the supervisor's) call Write and the deadlines
// from other goroutines; once EndStream returns, none of them reaches the
// response writer, and each fails with net.ErrClosed. A Read waiting on
// the body returns.
func TestStreamEndedIsNotTouched(t *testing.T) {
	w := &releasedWriter{ResponseRecorder: httptest.NewRecorder()}
	body, bodyW := io.Pipe()
	s := NewStream(w, body, "")
	if _, err := s.Write([]byte("HTTP/1.1 101 Switching Protocols\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	readDone := make(chan error, 1)
	go func() { _, err := s.Read(make([]byte, 8)); readDone <- err }()

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var errs [3]atomic.Value
	for i, call := range []func() error{
		func() error { _, err := s.Write([]byte{0x88, 0}); return err },
		func() error { return s.SetReadDeadline(time.Now().Add(time.Second)) },
		func() error { return s.SetWriteDeadline(time.Now().Add(time.Second)) },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					errs[i].Store(errBox{call()})
					return
				default:
					_ = call()
				}
			}
		}()
	}
	time.Sleep(5 * time.Millisecond)
	EndStream(s)
	w.released.Store(true)
	close(stop)
	wg.Wait()
	if n := w.late.Load(); n != 0 {
		t.Fatalf("%d calls reached the response after EndStream", n)
	}
	for i := range errs {
		if err := errs[i].Load().(errBox).err; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("call %d after EndStream: %v, want net.ErrClosed", i, err)
		}
	}
	select {
	case <-readDone:
	case <-time.After(5 * time.Second):
		t.Fatal("a Read waiting on the body did not return at EndStream")
	}
	_ = bodyW.Close()
	EndStream(s) // twice is harmless
}

type errBox struct{ err error }
