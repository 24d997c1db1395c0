package wsauth

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rerunWithXConnect runs the test name again in a process of its own with
// GODEBUG=http2xconnect=1, which Go's HTTP/2 server needs to accept
// extended CONNECT, and reports true, unless that is already set (false:
// the caller goes on).
func rerunWithXConnect(t *testing.T, name string) bool {
	t.Helper()
	if strings.Contains(os.Getenv("GODEBUG"), "http2xconnect=1") {
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "GODEBUG=http2xconnect=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("under GODEBUG=http2xconnect=1: %v\n%s", err, out)
	}
	return true
}

// h2Client starts e's gateway over HTTP/2 on TLS and returns a framer on a
// connection to it, after the preface and the client's SETTINGS, and the
// server's address (the requests' :authority). The connection and server
// end with the test.
func h2Client(t *testing.T, e *testEnv) (*http2.Framer, string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(e.gw)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return fr, srv.Listener.Addr().String()
}

// TestH2SessionEndsCleanly: an authenticated WebSocket over HTTP/2
// extended CONNECT (RFC 8441) that the client closes normally ends its
// stream with END_STREAM after the close echo, not with RST_STREAM:
// teardown's abort of the client leg moves no deadline when no write is
// under way (a past deadline resets an HTTP/2 stream). The test re-runs
// itself with GODEBUG=http2xconnect=1, which Go's HTTP/2 server needs to
// accept extended CONNECT.
func TestH2SessionEndsCleanly(t *testing.T) {
	if rerunWithXConnect(t, "TestH2SessionEndsCleanly") {
		return
	}
	e := newTestEnv(t, nil)
	fr, authority := h2Client(t, e)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "CONNECT"}, {":protocol", "websocket"}, {":scheme", "https"},
		{":authority", authority}, {":path", "/ws?version=1.1"}, {"sec-websocket-version", "13"},
		{"sec-websocket-protocol", DefaultSubprotocol}, {"authorization", "Bearer " + tokDemo}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID != 1 {
				continue
			}
			if s := f.PseudoValue("status"); s != "200" {
				t.Fatalf("status %s", s)
			}
			eventually(t, "the session to be authenticated", func() bool {
				return e.metrics.get(func(m *fakeMetrics) int { return m.sessions[StateAuthenticated] }) == 1
			})
			_ = fr.WriteData(1, false, []byte{0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8}) // a masked close, 1000
		case *http2.DataFrame:
			if f.StreamID == 1 && f.StreamEnded() {
				return // a clean end
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == 1 {
				t.Fatalf("stream reset (%v), want END_STREAM", f.ErrCode)
			}
		}
	}
}

// TestExtendedConnectStreamsCountAsSockets: over HTTP/2 extended CONNECT
// one TCP connection carries many WebSockets. Unauthenticated streams are
// counted against MaxUnauthenticated, and their source's sixteenth of it,
// like sockets (the ones over it get 503) and each is closed at the auth
// deadline. Re-runs itself with GODEBUG=http2xconnect=1.
func TestExtendedConnectStreamsCountAsSockets(t *testing.T) {
	if rerunWithXConnect(t, "TestExtendedConnectStreamsCountAsSockets") {
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
