package wshandler

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/gorilla/websocket"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	// reverse_proxy and the rest, as in cmd/gatehouse; the gatehouse app
	// comes with this package's import of caddymodule.
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/gatehouse/gatehouse/caddymodule/sqlitestore"
)

// demoSecretSHA256 is the SHA-256 of "demo-secret".
const demoSecretSHA256 = "cd577fe2561ebff23505db0bb006300c7cdecbd46bc0e03c449afafaca2c25bf"

// tlsSite is a Caddy site over TLS with Caddy's default protocols (h1, h2
// and h3), serving the identity server and the gateway.
type tlsSite struct {
	base    string // https://localhost:<port>
	addr    string // 127.0.0.1:<port>, TCP and UDP
	roots   *x509.CertPool
	backend chan http.Header // the backend leg's upgrade headers
}

// startTLSSite runs the site in-process until the test ends. Its
// certificate is for localhost from a test CA that only roots trusts.
func startTLSSite(t *testing.T) *tlsSite {
	t.Helper()
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	s := &tlsSite{backend: make(chan http.Header, 4)}
	certFile, keyFile := s.testCA(t)

	up := websocket.Upgrader{Subprotocols: []string{"ServiceJson"}}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		s.backend <- r.Header.Clone()
		for { // echo
			mt, p, err := c.ReadMessage()
			if err != nil || c.WriteMessage(mt, p) != nil {
				return
			}
		}
	}))
	t.Cleanup(backend.Close)

	port, httpPort := freeUDPAndTCPPort(t), freeUDPAndTCPPort(t)
	s.base = fmt.Sprintf("https://localhost:%d", port)
	s.addr = fmt.Sprintf("127.0.0.1:%d", port)
	caddyfile := fmt.Sprintf(`{
	admin off
	persist_config off
	http_port %d
	https_port %d
	auto_https disable_redirects
	log {
		level ERROR
	}
	gatehouse {
		issuer %s
		store sqlite %s
		client demo-service {
			secret_sha256 %s
			grant_types client_credentials
			scopes Service/Market
		}
		client trading-service {
			secret_sha256 %[5]s
			grant_types client_credentials
			scopes Service/Market Service/Trading Service/OrderPad
		}
	}
}

localhost:%d {
	tls %s %s
	gatehouse_identity
	handle /ws {
		gatehouse_ws {
			upstream ws://%[9]s/
		}
	}
	handle /tls-only {
		gatehouse_ws {
			upstream ws://%[9]s/
			require_tls
		}
	}
}
`, httpPort, port, s.base, filepath.Join(t.TempDir(), "gatehouse.db"), demoSecretSHA256,
		port, certFile, keyFile, strings.TrimPrefix(backend.URL, "http://"))
	cfgJSON, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
	if err != nil {
		t.Fatalf("adapting the Caddyfile: %v\n%s", err, caddyfile)
	}
	for _, w := range warnings {
		t.Logf("adapt warning: %s", w)
	}
	if err := caddy.Load(cfgJSON, true); err != nil {
		t.Fatalf("loading the config: %v", err)
	}
	t.Cleanup(func() { caddy.Stop() })
	return s
}

// testCA writes a certificate for localhost and 127.0.0.1, signed by a
// new CA that s.roots trusts, and returns the certificate's and key's
// files.
func (s *tlsSite) testCA(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gatehouse test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	s.roots = x509.NewCertPool()
	s.roots.AddCert(ca)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// freeUDPAndTCPPort is a port free on 127.0.0.1 for both TCP and UDP (h3
// listens on UDP).
func freeUDPAndTCPPort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no port free for both TCP and UDP")
	return 0
}

func (s *tlsSite) tlsConfig(alpn ...string) *tls.Config {
	return &tls.Config{RootCAs: s.roots, ServerName: "localhost", NextProtos: alpn}
}

// token gets an access token from the site's token endpoint over HTTPS
// (client credentials of demo-service).
func (s *tlsSite) token(t *testing.T) string {
	t.Helper()
	return s.tokenFor(t, "demo-service")
}

// tokenFor gets an access token for clientID (whose secret is
// demo-secret) with client credentials.
func (s *tlsSite) tokenFor(t *testing.T, clientID string) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: s.tlsConfig()}}
	req, _ := http.NewRequest(http.MethodPost, s.base+"/connect/token",
		strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, "demo-secret")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("token endpoint: %s: %s", resp.Status, body)
	}
	return tok.AccessToken
}

// wsHeaders are the headers of a browser's WebSocket handshake, without
// the HTTP/1.1 hop-by-hop pair (Connection, Upgrade).
func wsHeaders() http.Header {
	return http.Header{
		"Sec-Websocket-Version":  {"13"},
		"Sec-Websocket-Key":      {"dGhlIHNhbXBsZSBub25jZQ=="},
		"Sec-Websocket-Protocol": {"ServiceJson"},
		"Origin":                 {"https://localhost"},
	}
}

// TestGatewayOverTLS runs the gateway on a site with Caddy's default
// protocols over TLS: a WebSocket client gets its socket over HTTP/1.1
// (101) and over HTTP/3 (an extended CONNECT, RFC 9220, which quic-go
// always advertises), and reaches the backend either way; HTTP/2
// advertises no extended CONNECT by default, so a browser uses HTTP/1.1,
// and an HTTP/2 upgrade attempt gets a clean 400
// (TestGatewayOverHTTP2ExtendedConnect covers HTTP/2 with it advertised).
func TestGatewayOverTLS(t *testing.T) {
	s := startTLSSite(t)
	token := s.token(t)

	t.Run("wss over HTTP/1.1", func(t *testing.T) {
		d := websocket.Dialer{TLSClientConfig: s.tlsConfig(), Subprotocols: []string{"ServiceJson"}, HandshakeTimeout: 10 * time.Second}
		c, resp, err := d.Dial("wss://localhost"+strings.TrimPrefix(s.base, "https://localhost")+"/ws",
			http.Header{"Authorization": {"Bearer " + token}})
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		defer c.Close()
		if resp.StatusCode != http.StatusSwitchingProtocols || resp.Proto != "HTTP/1.1" || c.Subprotocol() != "ServiceJson" {
			t.Fatalf("handshake: %s %s, sub-protocol %q", resp.Proto, resp.Status, c.Subprotocol())
		}
		select {
		case h := <-s.backend:
			if h.Get("X-Gatehouse-Client-Id") != "demo-service" {
				t.Errorf("the backend's identity headers: %v", h)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the backend saw no socket")
		}
		msg := `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":1}`
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, p, err := c.ReadMessage()
		if err != nil || string(p) != msg {
			t.Fatalf("the backend's echo: %q, %v", p, err)
		}
	})

	t.Run("HTTP/2", func(t *testing.T) {
		h2 := dialH2(t, s)
		if v, ok := h2.settings[http2.SettingEnableConnectProtocol]; ok {
			t.Fatalf("HTTP/2 SETTINGS has ENABLE_CONNECT_PROTOCOL=%d: browsers would send WebSockets over HTTP/2", v)
		}

		// A handshake GET with the HTTP/1.1 Upgrade pair: HTTP/2 forbids
		// them, and the server answers 400 before any handler.
		hdr := wsHeaders()
		hdr.Set("Connection", "Upgrade")
		hdr.Set("Upgrade", "websocket")
		if status, body := h2.request(t, 1, "GET", "", hdr); status != "400" {
			t.Errorf("GET with Upgrade over HTTP/2: %s %s", status, body)
		}
		// Without them (all a client can send over HTTP/2), the request
		// reaches the handler, which answers 400.
		if status, body := h2.request(t, 3, "GET", "", wsHeaders()); status != "400" || !strings.Contains(body, "extended CONNECT") {
			t.Errorf("a handshake GET over HTTP/2: %s %q", status, body)
		}
		// An extended CONNECT (RFC 8441) is refused (RST_STREAM) as it was
		// not advertised.
		if status, body := h2.request(t, 5, "CONNECT", "websocket", wsHeaders()); status != "" || body != "RST_STREAM PROTOCOL_ERROR" {
			t.Errorf("extended CONNECT over HTTP/2: %q %q", status, body)
		}
	})

	t.Run("HTTP/3", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		qc, err := quic.DialAddr(ctx, s.addr, s.tlsConfig(http3.NextProtoH3), nil)
		if err != nil {
			t.Fatalf("QUIC dial: %v", err)
		}
		defer qc.CloseWithError(0, "")
		cc := (&http3.Transport{}).NewClientConn(qc)
		select {
		case <-cc.ReceivedSettings():
		case <-ctx.Done():
			t.Fatal("no HTTP/3 SETTINGS")
		}
		if !cc.Settings().EnableExtendedConnect {
			t.Fatal("HTTP/3 SETTINGS without ENABLE_CONNECT_PROTOCOL: quic-go's default changed; revisit the Handler's doc")
		}

		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/ws", nil)
		req.Header = wsHeaders()
		resp, err := cc.RoundTrip(req)
		if err != nil {
			t.Fatalf("GET over HTTP/3: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "extended CONNECT") {
			t.Errorf("a handshake GET over HTTP/3: %d %q", resp.StatusCode, body)
		}

		s.checkExtendedSocket(t, ctx, cc, true, token)
	})
}

// checkExtendedSocket opens sockets with extended CONNECTs over rt (HTTP/3
// when h3, else HTTP/2): a bad token gets 403 and no socket; a good one
// gets 200, permessage-deflate, the sub-protocol, a backend leg with the
// identity headers, and messages both ways; an unauthenticated socket gets
// an Authority error for a Market message.
func (s *tlsSite) checkExtendedSocket(t *testing.T, ctx context.Context, rt http.RoundTripper, h3 bool, token string) {
	t.Helper()
	_, resp, err := dialExtended(ctx, rt, h3, s.base+"/ws?version=1.1", http.Header{"Authorization": {"Bearer forged"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a forged token: %v, %v", resp, err)
	}

	c, resp, err := dialExtended(ctx, rt, h3, s.base+"/ws?version=1.1", http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatalf("extended CONNECT: %v (%v)", err, resp)
	}
	defer c.Close()
	if c.Subprotocol() != "ServiceJson" || !strings.Contains(resp.Header.Get("Sec-Websocket-Extensions"), "permessage-deflate") {
		t.Errorf("handshake: sub-protocol %q, extensions %q", c.Subprotocol(), resp.Header.Get("Sec-Websocket-Extensions"))
	}
	select {
	case h := <-s.backend:
		if h.Get("X-Gatehouse-Client-Id") != "demo-service" {
			t.Errorf("the backend's identity headers: %v", h)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the backend saw no socket")
	}
	msg := `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":1,"Data":"` + strings.Repeat("x", 64<<10) + `"}`
	for range 3 {
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if _, p, err := c.ReadMessage(); err != nil || string(p) != msg {
			t.Fatalf("the backend's echo: %d bytes, %v", len(p), err)
		}
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Trading","Topic":"QueryAccounts","TransactionID":2}`)); err != nil {
		t.Fatal(err)
	}
	if _, p, err := c.ReadMessage(); err != nil || !strings.Contains(string(p), `"Data":"Authority"`) {
		t.Fatalf("a message out of scope: %s, %v", p, err)
	}
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(5*time.Second))
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Errorf("close handshake: %v", err)
	}

	u, _, err := dialExtended(ctx, rt, h3, s.base+"/ws?version=1.1", nil)
	if err != nil {
		t.Fatalf("an unauthenticated socket: %v", err)
	}
	defer u.Close()
	if err := u.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"QueryMarkets","TransactionID":3}`)); err != nil {
		t.Fatal(err)
	}
	if _, p, err := u.ReadMessage(); err != nil || string(p) != `{"Controller":"Market","Topic":"QueryMarkets","Action":"Error","TransactionID":3,"Data":"Authority"}` {
		t.Fatalf("unauthenticated: %s, %v", p, err)
	}
}

// TestGatewayOverHTTP2ExtendedConnect: with GODEBUG=http2xconnect=1 Go's
// HTTP/2 server advertises extended CONNECT (RFC 8441) and the gateway
// serves WebSockets over it. net/http reads GODEBUG once at start-up, so
// the test runs itself again in a process that has it.
func TestGatewayOverHTTP2ExtendedConnect(t *testing.T) {
	if !strings.Contains(os.Getenv("GODEBUG"), "http2xconnect=1") {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGatewayOverHTTP2ExtendedConnect$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "GODEBUG=http2xconnect=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestGatewayOverHTTP2ExtendedConnect") {
			t.Fatalf("the test under GODEBUG=http2xconnect=1: %v\n%s", err, out)
		}
		return
	}
	s := startTLSSite(t)
	token := s.token(t)
	h2 := dialH2(t, s)
	if v := h2.settings[http2.SettingEnableConnectProtocol]; v != 1 {
		t.Fatalf("HTTP/2 SETTINGS_ENABLE_CONNECT_PROTOCOL %d under GODEBUG=http2xconnect=1", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// net/http's Transport refuses the ":protocol" header before its
	// HTTP/2 code sees it; x/net's takes it.
	//lint:ignore SA1019 the one client that sends an RFC 8441 CONNECT
	tr := &http2.Transport{TLSClientConfig: s.tlsConfig("h2")}
	s.checkExtendedSocket(t, ctx, tr, false, token)
}

// h2Conn is a raw HTTP/2 connection over TLS (ALPN h2).
type h2Conn struct {
	fr       *http2.Framer
	enc      *hpack.Encoder
	buf      bytes.Buffer
	settings map[http2.SettingID]uint32 // the server's first SETTINGS
	base     string
}

// dialH2 opens the connection and reads the server's SETTINGS.
func dialH2(t *testing.T, s *tlsSite) *h2Conn {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", s.addr, s.tlsConfig("h2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN: %q, want h2", p)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c := &h2Conn{fr: http2.NewFramer(conn, conn), settings: map[http2.SettingID]uint32{}, base: s.base}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.buf)
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	f, err := c.fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		t.Fatalf("the server's first frame: %v, want SETTINGS", f)
	}
	sf.ForeachSetting(func(s http2.Setting) error {
		c.settings[s.ID] = s.Val
		return nil
	})
	t.Logf("HTTP/2 SETTINGS: %v", c.settings)
	if err := c.fr.WriteSettingsAck(); err != nil {
		t.Fatal(err)
	}
	return c
}

// request sends a request on stream id to /ws (an extended CONNECT when
// protocol is set) and reads the response: its :status and body, or
// ("", "RST_STREAM <code>").
func (c *h2Conn) request(t *testing.T, id uint32, method, protocol string, hdr http.Header) (status, body string) {
	t.Helper()
	c.buf.Reset()
	write := func(name, value string) {
		if err := c.enc.WriteField(hpack.HeaderField{Name: name, Value: value}); err != nil {
			t.Fatal(err)
		}
	}
	write(":method", method)
	write(":scheme", "https")
	write(":authority", strings.TrimPrefix(c.base, "https://"))
	write(":path", "/ws")
	if protocol != "" {
		write(":protocol", protocol)
	}
	for name, values := range hdr {
		for _, v := range values {
			write(strings.ToLower(name), v)
		}
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.buf.Bytes(),
		EndStream: protocol == "", EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the response on stream %d: %v", id, err)
		}
		if f.Header().StreamID != id {
			continue // SETTINGS ACK, WINDOW_UPDATE, ...
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			status = f.PseudoValue("status")
			if f.StreamEnded() {
				return status, b.String()
			}
		case *http2.DataFrame:
			b.Write(f.Data())
			if f.StreamEnded() {
				return status, b.String()
			}
		case *http2.RSTStreamFrame:
			return status, "RST_STREAM " + f.ErrCode.String()
		}
	}
}
