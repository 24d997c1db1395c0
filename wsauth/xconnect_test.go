package wsauth

import (
	"bytes"
	"crypto/tls"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestH2SessionEndsCleanly: an authenticated WebSocket over HTTP/2
// extended CONNECT (RFC 8441) that the client closes normally ends its
// stream with END_STREAM after the close echo, not with RST_STREAM:
// teardown's abort of the client leg moves no deadline when no write is
// under way (a past deadline resets an HTTP/2 stream). The test re-runs
// itself with GODEBUG=http2xconnect=1, which Go's HTTP/2 server needs to
// accept extended CONNECT.
func TestH2SessionEndsCleanly(t *testing.T) {
	if !strings.Contains(os.Getenv("GODEBUG"), "http2xconnect=1") {
		cmd := exec.Command(os.Args[0], "-test.run=^TestH2SessionEndsCleanly$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "GODEBUG=http2xconnect=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestH2SessionEndsCleanly") {
			t.Fatalf("under GODEBUG=http2xconnect=1: %v\n%s", err, out)
		}
		return
	}
	e := newTestEnv(t, nil)
	srv := httptest.NewUnstartedServer(e.gw)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "CONNECT"}, {":protocol", "websocket"}, {":scheme", "https"},
		{":authority", srv.Listener.Addr().String()}, {":path", "/ws?version=1.1"}, {"sec-websocket-version", "13"},
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
