package caddymodule_test

// Configurations a reasonable operator could write that left Gatehouse
// less secure than intended instead of being refused at load, and load
// errors that quoted a secret. Each test states the property it checks;
// each failed before its fix.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/caddymodule/pgstore"
	"github.com/gatehouse/gatehouse/caddymodule/queryhandler"
	"github.com/gatehouse/gatehouse/caddymodule/wshandler"
	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// demoSecretSHA256 is the SHA-256 of "demo-secret".
const demoSecretSHA256 = "cd577fe2561ebff23505db0bb006300c7cdecbd46bc0e03c449afafaca2c25bf"

// parseWS runs the gatehouse_ws directive's parser on a Caddyfile
// fragment (the directive and its block).
func parseWS(t *testing.T, src string) *wshandler.Handler {
	t.Helper()
	h := new(wshandler.Handler)
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src)); err != nil {
		t.Fatalf("parsing %q: %v", src, err)
	}
	return h
}

// TestWSWildcardDenyDenies: an operator who adds `deny Trading *`
// (or `deny * PlaceOrder`) to the message policy means that no session may
// place orders through this gateway. The rule is accepted at load, so it
// must deny what it names: Trading/PlaceOrder for a session holding
// Service/OrderPad. (A wildcard deny that an exact default row shadows
// should either win or be refused at load.)
func TestWSWildcardDenyDenies(t *testing.T) {
	for _, rule := range []string{"deny Trading *", "deny * PlaceOrder"} {
		t.Run(rule, func(t *testing.T) {
			h := parseWS(t, "gatehouse_ws {\n\tupstream ws://127.0.0.1:1/ws\n\tpolicy {\n\t\t"+rule+"\n\t}\n}")
			if err := h.Validate(); err != nil {
				if !strings.Contains(err.Error(), "Trading") && !strings.Contains(err.Error(), "PlaceOrder") {
					t.Fatalf("refused for another reason: %v", err)
				}
				return // refused at load: safe
			}
			p, err := policy.New(*h.Policy)
			if err != nil {
				return
			}
			if ok, _ := p.Allowed([]string{policy.ScopeOrderPad}, "Trading", "PlaceOrder!ACC1"); ok {
				t.Errorf("policy { %s } loads, yet Trading/PlaceOrder stays allowed to Service/OrderPad: "+
					"the exact default row outranks the operator's wildcard deny", rule)
			}
		})
	}
}

// TestWSRequireTLSNamesKnownScopes: require_tls names the scopes it
// withholds without TLS. Names that are no scope the message policy (or
// the default withheld list) knows, such as the short names the directive's
// own syntax comment uses ("default Trading, OrderPad"), would withhold
// nothing and silently drop the default Service/Trading and
// Service/OrderPad: the config must be refused. So must withheld_scopes
// without require_tls (JSON), which withholds nothing.
func TestWSRequireTLSNamesKnownScopes(t *testing.T) {
	t.Run("short names", func(t *testing.T) {
		h := parseWS(t, "gatehouse_ws {\n\tupstream ws://127.0.0.1:1/ws\n\trequire_tls Trading OrderPad\n}")
		if err := h.Validate(); err == nil {
			t.Errorf("require_tls %v loads: no session has these scopes, so over plain HTTP nothing is withheld "+
				"(Service/Trading and Service/OrderPad pass)", h.WithheldScopes)
		}
	})
	t.Run("withheld_scopes without require_tls", func(t *testing.T) {
		h := new(wshandler.Handler)
		if err := json.Unmarshal([]byte(`{"upstreams":["ws://127.0.0.1:1/ws"],"withheld_scopes":["Service/Trading"]}`), h); err != nil {
			t.Fatal(err)
		}
		if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "without require_tls") {
			t.Errorf("withheld_scopes without require_tls: %v", err)
		}
	})
}

// TestWSLimitOverrideBelowDefaultRefused: a `limits client <id>` block
// reads as the limits of that client. Overrides can only raise limits, so
// one whose every limit is below the default (an operator throttling a
// scraper to 1 message/s) changes nothing: it must be refused at load.
func TestWSLimitOverrideBelowDefaultRefused(t *testing.T) {
	h := parseWS(t, "gatehouse_ws {\n\tupstream ws://127.0.0.1:1/ws\n\tlimits client scraper {\n\t\tmessages_per_second 1\n\t\tburst 2\n\t\tsubscriptions 5\n\t}\n}")
	if err := h.Validate(); err == nil {
		t.Errorf("limits client scraper { messages_per_second 1; burst 2; subscriptions 5 } loads, "+
			"but the client keeps the defaults (%v/s, burst %d, %d subscriptions)",
			policy.DefaultMessagesPerSecond, policy.DefaultBurst, policy.DefaultSubscriptions)
	}
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestLockoutUnderASecondRefused: Caddy's JSON takes a bare number as a
// duration in nanoseconds. An operator who writes the lockout in seconds
// ("duration": 900, "window": 900) gets a 900 ns lockout over a 900 ns
// window: failures are forgotten at once and nothing is ever locked. A
// lockout duration or window under a second protects nothing and must be
// refused.
func TestLockoutUnderASecondRefused(t *testing.T) {
	var app caddymodule.App
	if err := json.Unmarshal([]byte(`{"issuer":"http://localhost:8080","lockout":{"duration":900,"window":900}}`), &app); err != nil {
		t.Fatal(err)
	}
	if err := app.Validate(); err == nil {
		t.Errorf("lockout {duration: 900, window: 900} (JSON: nanoseconds) validates: lockout %v over a window of %v",
			time.Duration(app.Lockout.Duration), time.Duration(app.Lockout.Window))
	}
}

// TestPlainHTTPRedirectURIRefused: a redirect URI receives
// authorization codes (and, with the implicit grant, tokens). One over
// plain http to a host other than loopback (a missing "s") sends them in
// the clear; OAuth 2.0 Security BCP (RFC 9700 §2.6) and RFC 8252 allow
// http only for loopback. It must be refused at load.
func TestPlainHTTPRedirectURIRefused(t *testing.T) {
	app := &caddymodule.App{
		Issuer: "https://auth.example.com",
		Clients: []caddymodule.Client{{ID: "web", Public: true, GrantTypes: []string{"authorization_code"},
			Scopes: []string{"openid"}, RedirectURIs: []string{"http://app.example.com/callback"}}},
	}
	if err := app.Validate(); err == nil {
		t.Errorf("redirect URI http://app.example.com/callback validates: codes travel in the clear")
	}
	// Loopback stays allowed (RFC 8252 §7.3), as the demo needs.
	app.Clients[0].RedirectURIs = []string{"http://127.0.0.1/callback", "http://localhost:8080/callback"}
	if err := app.Validate(); err != nil {
		t.Errorf("loopback redirect URIs refused: %v", err)
	}
}

// TestConfigErrorsHideSecrets: a load error is printed on the
// operator's terminal, written to Caddy's log and answered by the admin
// API; it must not quote a secret that a plausible mistake put in the
// wrong field: a plain client secret in secret_sha256, the key itself in
// encryption_key_env, a DSN in dsn_env, credentials in a URL, an unquoted
// key=value DSN.
func TestConfigErrorsHideSecrets(t *testing.T) {
	const secret = "Sup3rS3cretValue-9f2c"
	kek := strings.Repeat("ab", 32)
	dsn := "postgres://gatehouse:" + secret + "@db.internal:5432/gatehouse"
	// adapt adapts a Caddyfile whose gatehouse option holds lines.
	adapt := func(lines string) error {
		cf := "{\n\tgatehouse {\n\t\tissuer http://localhost:8080\n\t\t" + lines + "\n\t}\n}\n"
		_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), nil)
		return err
	}
	newCtx := func(t *testing.T) caddy.Context {
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		t.Cleanup(cancel)
		return ctx
	}
	tests := []struct {
		name   string
		secret string
		err    func(t *testing.T) error
	}{
		{"client secret in secret_sha256", secret, func(t *testing.T) error {
			a := &caddymodule.App{Issuer: "http://localhost:8080", Clients: []caddymodule.Client{
				{ID: "svc", SecretSHA256: []string{secret}, GrantTypes: []string{"client_credentials"}}}}
			return a.Validate()
		}},
		{"api resource secret in secret_sha256", secret, func(t *testing.T) error {
			a := &caddymodule.App{Issuer: "http://localhost:8080", APIResources: []caddymodule.APIResource{
				{Name: "market-api", SecretSHA256: []string{secret}}}}
			return a.Validate()
		}},
		{"key in encryption_key_env", kek, func(t *testing.T) error {
			a := &caddymodule.App{Issuer: "http://localhost:8080", SigningKeys: &caddymodule.SigningKeys{EncryptionKeyEnv: kek}}
			return a.Validate()
		}},
		{"DSN in store dsn_env", secret, func(t *testing.T) error {
			s := &pgstore.PostgresStore{DSNEnv: dsn}
			if err := s.Validate(); err != nil {
				return err
			}
			return s.Provision(newCtx(t))
		}},
		{"DSN in query engine dsn_env", secret, func(t *testing.T) error {
			e := &queryhandler.PostgresEngine{DSNEnv: dsn}
			return e.Provision(newCtx(t))
		}},
		{"credentials in a ws upstream URL", secret, func(t *testing.T) error {
			h := &wshandler.Handler{Upstreams: []string{"https://gw:" + secret + "@backend.internal/ws"}}
			return h.Validate()
		}},
		{"credentials in the iq engine URL", secret, func(t *testing.T) error {
			e := &queryhandler.IQEngine{URL: "https://iq:" + secret + "@iq.internal",
				Tables: []queryhandler.IQTable{{Name: "T", Columns: []queryhandler.IQColumn{{Name: "C", Type: "String"}}}}}
			return e.Validate()
		}},
		{"a key in the iq engine URL's query", secret, func(t *testing.T) error {
			e := &queryhandler.IQEngine{URL: "https://iq.internal/api?api_key=" + secret,
				Tables: []queryhandler.IQTable{{Name: "T", Columns: []queryhandler.IQColumn{{Name: "C", Type: "String"}}}}}
			return e.Validate()
		}},
		{"a token in a ws upstream URL's query", secret, func(t *testing.T) error {
			h := &wshandler.Handler{Upstreams: []string{"wss://backend.internal/ws?version=1&token=" + secret}}
			return h.Validate()
		}},
		{"a key in jwks_url's fragment", secret, func(t *testing.T) error {
			a := &caddymodule.App{VerifierConfig: &caddymodule.VerifierConfig{Issuer: "https://idp.example.com",
				JWKSURL: "https://idp.example.com/jwks#" + secret}}
			return a.Validate()
		}},
		{"credentials in jwks_url", secret, func(t *testing.T) error {
			a := &caddymodule.App{VerifierConfig: &caddymodule.VerifierConfig{Issuer: "https://idp.example.com",
				JWKSURL: "https://jwks:" + secret + "@idp.example.com/jwks"}}
			return a.Validate()
		}},
		{"unquoted key=value DSN", "password=" + secret, func(t *testing.T) error {
			cf := "{\n\tgatehouse {\n\t\tissuer http://localhost:8080\n\t\tstore postgres user=gatehouse password=" + secret +
				" host=db.internal\n\t}\n}\n"
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), nil)
			return err
		}},
		{"unquoted DSN in the store's dsn_env", "password=" + secret, func(t *testing.T) error {
			return adapt("store postgres {\n\t\t\tdsn_env user=g password=" + secret + " host=db\n\t\t}")
		}},
		{"a DSN alone in the store block", secret, func(t *testing.T) error {
			return adapt("store postgres {\n\t\t\t" + dsn + "\n\t\t}")
		}},
		{"a key after encryption_key_env's name", kek, func(t *testing.T) error {
			return adapt("signing_keys {\n\t\t\tencryption_key_env KEK " + kek + "\n\t\t}")
		}},
		{"unquoted DSN in the query engine's dsn_env", "password=" + secret, func(t *testing.T) error {
			cf := "{\n\tgatehouse {\n\t\tissuer http://localhost:8080\n\t}\n}\n:8080 {\n\tgatehouse_query {\n\t\tengine postgres {\n\t\t\tdsn_env user=g password=" +
				secret + " host=db\n\t\t}\n\t}\n}\n"
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), nil)
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err(t)
			if err == nil {
				t.Fatal("the mistake loads")
			}
			if strings.Contains(err.Error(), tc.secret) {
				t.Errorf("the error quotes the secret: %v", err)
			}
		})
	}
}

// TestWSAuthOwnerHonoursTrustedProxies: behind a TLS-ending proxy
// the operator sets the server's trusted_proxies, and the brute-force
// defence keys its lockout on (user, Caddy's client IP), "without letting
// a stranger lock anyone out" (docs/design.md). The message gateway's
// AuthOwner must honour trusted_proxies as the token endpoint does: a
// stranger's wrong passwords, sent through the proxy, must not lock out
// the same user logging in through the same proxy from another address.
func TestWSAuthOwnerHonoursTrustedProxies(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := websocket.Upgrader{Subprotocols: []string{"ServiceJson"}}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}))
	defer backend.Close()
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	port := freePort(t)
	cf := fmt.Sprintf(`{
	admin off
	persist_config off
	log {
		level ERROR
	}
	servers {
		trusted_proxies static 127.0.0.1/32
	}
	gatehouse {
		issuer http://127.0.0.1:%d
		store sqlite %s
		users_file ../examples/users.json
		client demo-app {
			public
			grant_types password
			scopes openid Service/Market
		}
		lockout {
			max_failures 3
			throttle_after 50
		}
	}
}

http://127.0.0.1:%d {
	bind 127.0.0.1
	gatehouse_identity
	gatehouse_ws /ws {
		upstream ws%s/ws
	}
}
`, port, filepath.Join(t.TempDir(), "g.db"), port, strings.TrimPrefix(backend.URL, "http"))
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), nil)
	if err != nil {
		t.Fatalf("adapt: %v", err)
	}
	if err := caddy.Load(cfg, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { caddy.Stop() })

	// authOwner opens a socket as the proxy would, for the client at
	// forwardedFor, and answers the Result of one AuthOwner per password.
	authOwner := func(forwardedFor string, passwords ...string) []string {
		t.Helper()
		d := websocket.Dialer{Subprotocols: []string{"ServiceJson"}, HandshakeTimeout: 10 * time.Second}
		c, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/ws?version=1.1", port),
			http.Header{"X-Forwarded-For": {forwardedFor}, "X-Forwarded-Proto": {"https"}})
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		defer c.Close()
		var results []string
		for i, pw := range passwords {
			msg := fmt.Sprintf(`{"Controller":"Auth","Topic":"AuthOwner","TransactionID":%d,"Data":{"ClientID":"demo-app","Username":"demo","Password":%q}}`, i+1, pw)
			if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				_, p, err := c.ReadMessage()
				if err != nil {
					t.Fatalf("reading the AuthOwner reply: %v", err)
				}
				var z struct {
					Topic string
					Data  struct{ Result string }
				}
				if json.Unmarshal(p, &z) == nil && z.Topic == "Identify" {
					results = append(results, z.Data.Result)
					break
				}
			}
		}
		return results
	}
	if got := authOwner("198.51.100.9", "demo"); got[0] != "Success" {
		t.Fatalf("the victim's own login before any attack: %v", got)
	}
	// Control: the token endpoint honours trusted_proxies, so the same
	// guesses there lock out only the stranger's pair.
	passwordGrant := func(forwardedFor, password string) int {
		form := url.Values{"grant_type": {"password"}, "client_id": {"demo-app"}, "username": {"demo"}, "password": {password}}
		req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/connect/token", port), strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", forwardedFor)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, pw := range []string{"guess-1", "guess-2", "guess-3"} {
		passwordGrant("203.0.113.7", pw)
	}
	if status := passwordGrant("198.51.100.9", "demo"); status != http.StatusOK {
		t.Fatalf("control: the token endpoint refused the victim after the stranger's guesses (%d)", status)
	}
	if got := authOwner("203.0.113.7", "guess-1", "guess-2", "guess-3"); strings.Join(got, ",") != "Reject,Reject,Reject" {
		t.Fatalf("the stranger's guesses: %v", got)
	}
	if got := authOwner("198.51.100.9", "demo"); got[0] != "Success" {
		t.Errorf("after a stranger at 203.0.113.7 sent 3 wrong passwords for demo through the trusted proxy, "+
			"demo at 198.51.100.9 with the right password gets %v: the gateway counted both at the proxy's address", got)
	}
}

// TestEmptyDefaultScopesMeansNone: in JSON an operator can write
// "default_scopes": [] for a client, meaning that a request naming no
// scope gets none. It is read as absent, and such a request gets every
// scope the client may request, admin ones included. An explicit empty
// list must mean none (or be refused).
func TestEmptyDefaultScopesMeansNone(t *testing.T) {
	var app caddymodule.App
	if err := json.Unmarshal([]byte(`{"issuer":"http://localhost:8080","clients":[{"id":"svc",
		"secret_sha256":["`+demoSecretSHA256+`"],"grant_types":["client_credentials"],
		"scopes":["Service/Market","Service/Admin"],"default_scopes":[]}]}`), &app); err != nil {
		t.Fatal(err)
	}
	if err := app.Validate(); err != nil {
		return // refused: safe
	}
	cfg, err := app.IdentityConfig()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := clients.NewRegistry(cfg.Clients, nil, clients.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := reg.Client("svc")
	if got, _ := c.RequestedScopes(""); len(got) > 0 {
		t.Errorf(`"default_scopes": [] loads, and a token request without scope gets %v`, got)
	}
}
