package wsauth

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

const identifyDemo = `{"Result":"Success","DisplayName":"Demo User","UserID":"u-demo","ExpiryDate":"20261121T103000Z","Scope":["Gatehouse.Service.Market","Gatehouse.Service.News"]}`

func TestHeaderAuth(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		status int
	}{
		{"valid token", bearer(tokDemo), http.StatusSwitchingProtocols},
		{"scheme in another case", http.Header{"Authorization": {"bearer " + tokDemo}}, http.StatusSwitchingProtocols},
		{"refused token", bearer("forged"), http.StatusForbidden},
		{"other provider", http.Header{"Authorization": {"Basic " + tokDemo}}, http.StatusForbidden},
		{"no token", http.Header{"Authorization": {"Bearer"}}, http.StatusForbidden},
		{"two headers", http.Header{"Authorization": {"Bearer " + tokDemo, "Bearer " + tokDemo}}, http.StatusForbidden},
		{"token over the bound", bearer(strings.Repeat("a", zenith.DefaultMaxTokenBytes+1)), http.StatusForbidden},
		{"verifier fault", bearer(tokFault), http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, nil)
			c, resp, err := e.tryDial(tt.header, nil)
			if resp == nil || resp.StatusCode != tt.status {
				t.Fatalf("status: got %v (err %v), want %d", resp, err, tt.status)
			}
			if tt.status != http.StatusSwitchingProtocols {
				if c != nil {
					t.Fatal("a socket opened")
				}
				if n := e.backend.upgrades(); n != 0 {
					t.Fatalf("the backend saw %d upgrades", n)
				}
				return
			}
			defer c.Close()
			if got := c.Subprotocol(); got != DefaultSubprotocol {
				t.Errorf("sub-protocol %q", got)
			}
			got := roundTrip(t, c, `{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":3}`)
			want := `{"Controller":"Auth","Topic":"QueryIdentify","Action":"Publish","TransactionID":3,"Data":` + identifyDemo + `}`
			if got != want {
				t.Errorf("QueryIdentify:\n got %s\nwant %s", got, want)
			}
			e.backend.mu.Lock()
			h, u := e.backend.headers[0], e.backend.urls[0]
			e.backend.mu.Unlock()
			if h.Get("X-User-Id") != "u-demo" || h.Get("X-Client-Id") != "demo-app" || h.Get("X-Scopes") != "openid Service/Market Service/News" {
				t.Errorf("backend identity headers: %v", h)
			}
			if h.Get("Authorization") != "" {
				t.Error("the token reached the backend")
			}
			if h.Get("Sec-Websocket-Protocol") != DefaultSubprotocol {
				t.Errorf("backend sub-protocol %q", h.Get("Sec-Websocket-Protocol"))
			}
			if u != "/zenith?version=1.1" {
				t.Errorf("backend URL %q", u)
			}
		})
	}
}

// authToken is an AuthToken message with TransactionID 1.
func authToken(provider, tok string) string {
	return `{"Controller":"Auth","Topic":"AuthToken","TransactionID":1,"Data":{"Provider":"` + provider + `","AccessToken":"` + tok + `"}}`
}

func TestMessageAuth(t *testing.T) {
	reject := `{"Controller":"Auth","Topic":"Identify","Action":"Publish","TransactionID":1,"Data":{"Result":"Reject"}}`
	success := `{"Controller":"Auth","Topic":"Identify","Action":"Publish","TransactionID":1,"Data":` + identifyDemo + `}`
	tests := []struct {
		name, msg, want string
		motif, ok       bool
	}{
		{"raw token", authToken("Bearer", tokDemo), success, false, true},
		{"Base-64 token", authToken("Bearer", base64.StdEncoding.EncodeToString([]byte(tokDemo))), success, false, true},
		{"refused token", authToken("Bearer", "forged"), reject, false, false},
		{"other provider", authToken("Basic", tokDemo), reject, false, false},
		{"verifier fault", authToken("Bearer", tokFault), reject, false, false},
		{"no Data", `{"Controller":"Auth","Topic":"AuthToken","TransactionID":1}`, reject, false, false},
		{"motif profile", authToken("Bearer", tokDemo),
			`{"Controller":"Auth","Topic":"AuthToken","Action":"Publish","TransactionID":1,"Data":{"Result":"Success","AccessToken":"` +
				base64.StdEncoding.EncodeToString([]byte(tokDemo)) + `","DisplayName":"Demo User","UserID":"u-demo","ExpiryDate":"20261121T103000Z","ExpiresIn":"01:00:00.0000000","Scope":["Gatehouse.Service.Market","Gatehouse.Service.News"]}}`,
			true, true},
		{"motif profile refused", authToken("Bearer", "forged"),
			`{"Controller":"Auth","Topic":"AuthToken","Action":"Publish","TransactionID":1,"Data":{"Result":"Rejected"}}`, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, func(c *Config) {
				if tt.motif {
					c.Profile.Motif, c.Auth.ReturnAccessToken = true, []string{"*"}
				}
			})
			c := e.dial(nil)
			if got := roundTrip(t, c, tt.msg); got != tt.want {
				t.Fatalf("reply:\n got %s\nwant %s", got, tt.want)
			}
			for _, entry := range e.logs.All() {
				for _, f := range entry.Context {
					if strings.Contains(f.String, tokDemo) || strings.Contains(f.String, "forged") {
						t.Errorf("log %q carries the token", entry.Message)
					}
				}
			}
			if e.logs.FilterMessage("ws authentication").Len() != 1 {
				t.Error("no audit entry for the authentication")
			}
			echo := `{"Controller":"Market","Topic":"Echo","TransactionID":2}`
			if !tt.ok {
				if n := e.backend.upgrades(); n != 0 {
					t.Fatalf("backend leg opened without authentication")
				}
				// The session stays as it was: unauthenticated.
				got := roundTrip(t, c, echo)
				if want := `{"Controller":"Market","Topic":"Echo","Action":"Error","TransactionID":2,"Data":"Authority"}`; got != want {
					t.Fatalf("after a reject: got %s", got)
				}
				return
			}
			if got := roundTrip(t, c, echo); got != echo {
				t.Fatalf("relay: got %s", got)
			}
			if got := e.backend.received(); len(got) != 1 || got[0] != echo {
				t.Fatalf("backend received %q", got)
			}
		})
	}
}

func TestUnauthenticatedMessageGetsErrorAndBackendSeesNothing(t *testing.T) {
	e := newTestEnv(t, nil)
	c := e.dial(nil)
	for _, tt := range []struct{ msg, want string }{
		{`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","TransactionID":42}`,
			`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Error","TransactionID":42,"Data":"Authority"}`},
		{`{"Topic":"ServerInfo"}`, `{"Controller":"Zenith","Topic":"ServerInfo","Action":"Error","Data":"Authority"}`},
		{`{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":5}`,
			`{"Controller":"Auth","Topic":"QueryIdentify","Action":"Publish","TransactionID":5,"Data":{"Result":"Reject"}}`},
		{`{"Controller":"Auth","Topic":"Identify","Action":"Sub","TransactionID":6}`,
			`{"Controller":"Auth","Topic":"Identify","Action":"Error","TransactionID":6,"Data":"Authority"}`},
		{`{"Controller":"Auth","Topic":"Identify","Action":"Cancel","TransactionID":7}`,
			`{"Controller":"Auth","Topic":"Identify","Action":"Error","TransactionID":7,"Data":"Operation.Unknown"}`},
	} {
		if got := roundTrip(t, c, tt.msg); got != tt.want {
			t.Errorf("got %s\nwant %s", got, tt.want)
		}
	}
	if n := e.backend.upgrades(); n != 0 {
		t.Fatalf("the backend saw %d upgrades", n)
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.denied["Market"] }); n != 1 {
		t.Errorf("denied Market: %d", n)
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.denied["Auth"] }); n != 1 {
		t.Errorf("denied Auth (the Identify Sub): %d", n)
	}
}

func TestAuthOwnerAndAuthCode(t *testing.T) {
	owner := func(user, pass string) string {
		return `{"Controller":"Auth","Topic":"AuthOwner","TransactionID":9,"Data":{"ClientID":"demo-app","Username":"` + user + `","Password":"` + pass + `"}}`
	}
	reject := `{"Controller":"Auth","Topic":"Identify","Action":"Publish","TransactionID":9,"Data":{"Result":"Reject"}}`
	code := func(data string) string {
		return `{"Controller":"Auth","Topic":"AuthCode","TransactionID":9,"Data":` + data + `}`
	}
	success := `{"Controller":"Auth","Topic":"Identify","Action":"Publish","TransactionID":9,"Data":{"Result":"Success","UserID":"u-trader","ExpiryDate":"20261121T103000Z","Scope":["Gatehouse.Service.Trading"]}}`
	goodCode := `{"ClientID":"demo-app","Code":"good","RedirectURI":"http://127.0.0.1/cb","CodeVerifier":"v"}`
	tests := []struct {
		name      string
		checker   PasswordChecker
		codes     CodeExchanger
		msg, want string
	}{
		{"no checker", nil, nil, owner("trader", "trader"), reject},
		{"right password", fakePasswords{}, nil, owner("trader", "trader"), success},
		{"wrong password", fakePasswords{}, nil, owner("trader", "guess"), reject},
		{"malformed", fakePasswords{}, nil, `{"Controller":"Auth","Topic":"AuthOwner","TransactionID":9,"Data":{"Username":1}}`, reject},
		{"AuthCode without a code exchange", fakePasswords{}, nil, code(goodCode), reject},
		{"AuthCode", nil, fakeCodes{}, code(goodCode), success},
		{"AuthCode refused", nil, fakeCodes{}, code(`{"ClientID":"demo-app","Code":"used"}`), reject},
		{"AuthCode without a client", nil, fakeCodes{}, code(`{"Code":"good"}`), reject},
		{"AuthCode without a code", nil, fakeCodes{}, code(`{"ClientID":"demo-app"}`), reject},
		{"AuthCode code twice", nil, fakeCodes{}, code(`{"ClientID":"demo-app","Code":"good","Code":"good"}`), reject},
		{"AuthCode code not a string", nil, fakeCodes{}, code(`{"ClientID":"demo-app","Code":1}`), reject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, func(c *Config) { c.Hooks.Passwords, c.Hooks.Codes = tt.checker, tt.codes })
			c := e.dial(nil)
			if got := roundTrip(t, c, tt.msg); got != tt.want {
				t.Fatalf("got %s\nwant %s", got, tt.want)
			}
			wantUp := 0
			if strings.Contains(tt.want, "Success") {
				wantUp = 1
			}
			if n := e.backend.upgrades(); n != wantUp {
				t.Fatalf("backend upgrades %d, want %d", n, wantUp)
			}
		})
	}
}

// fakeCodes accepts the code "good" of demo-app with its redirect URI and
// verifier.
type fakeCodes struct{}

func (fakeCodes) ExchangeCode(_ context.Context, c CodeCredentials) (Identity, error) {
	if c.ClientID == "demo-app" && c.Code == "good" && c.RedirectURI == "http://127.0.0.1/cb" && c.CodeVerifier == "v" {
		return Identity{Subject: "u-trader", ClientID: c.ClientID, Scopes: []string{policy.ScopeTrading}, Expiry: testExpiry}, nil
	}
	return Identity{}, &Refusal{Reason: "invalid_grant"}
}

func TestPolicyDenialPerArea(t *testing.T) {
	tests := []struct {
		token, controller, topic string
		allowed                  bool
	}{
		{tokDemo, "Market", "Depth!BHP.ASX", true},
		{tokDemo, "News", "QueryNews", true},
		{tokDemo, "Zenith", "ServerInfo", true},
		{tokDemo, "Trading", "QueryAccounts", false},
		{tokDemo, "Trading", "PlaceOrder", false},
		{tokDemo, "Trading", "AuthoriseOrder", false},
		{tokDemo, "Unknown", "Thing", false},
		{tokTrader, "Trading", "QueryAccounts", true},
		{tokTrader, "Trading", "PlaceOrder", true},
		{tokTrader, "Trading", "AuthoriseOrder", false},
	}
	for _, tt := range tests {
		t.Run(tt.token+"/"+tt.controller+"/"+tt.topic, func(t *testing.T) {
			e := newTestEnv(t, nil)
			c := e.dial(bearer(tt.token))
			msg := `{"Controller":"` + tt.controller + `","Topic":"` + tt.topic + `","TransactionID":77,"Data":{"Secret":"s3cr3t"}}`
			if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			// The socket stays open either way: an echo comes back.
			echo := `{"Controller":"Market","Topic":"Echo"}`
			if !tt.allowed {
				want := `{"Controller":"` + tt.controller + `","Topic":"` + tt.topic + `","Action":"Error","TransactionID":77,"Data":"Authority"}`
				if got := readMsg(t, c); got != want {
					t.Fatalf("got %s\nwant %s", got, want)
				}
			}
			if got := roundTrip(t, c, echo); got != echo {
				t.Fatalf("echo: %s", got)
			}
			got := e.backend.received()
			want := []string{echo}
			if tt.allowed {
				want = []string{msg, echo} // byte for byte
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("backend received %q, want %q", got, want)
			}
			relayed := e.metrics.get(func(m *fakeMetrics) int { return m.relayed[controllerLabel(tt.controller)] })
			denied := e.metrics.get(func(m *fakeMetrics) int { return m.denied[controllerLabel(tt.controller)] })
			if tt.allowed != (relayed >= 1 && denied == 0) {
				t.Errorf("metrics: relayed %d, denied %d", relayed, denied)
			}
			audit := e.logs.FilterMessage("ws order message").Len() + e.logs.FilterMessage("ws message denied").Len()
			wantAudit := 0
			if !tt.allowed || tt.topic == "PlaceOrder" {
				wantAudit = 1
			}
			if audit != wantAudit {
				t.Errorf("audit entries %d, want %d", audit, wantAudit)
			}
			for _, entry := range e.logs.All() {
				for _, f := range entry.Context {
					if strings.Contains(f.String, "s3cr3t") || strings.Contains(f.String, tt.token) {
						t.Errorf("log %q carries Data or the token", entry.Message)
					}
				}
			}
		})
	}
}

func TestHijackThroughUnwrap(t *testing.T) {
	e := newTestEnv(t, nil)
	// A ResponseWriter that offers Hijack only through Unwrap, as Caddy's.
	e.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.gw.ServeHTTP(unwrapOnly{w}, r)
	})
	c := e.dial(bearer(tokDemo))
	echo := `{"Controller":"Market","Topic":"Echo"}`
	if got := roundTrip(t, c, echo); got != echo {
		t.Fatalf("echo: %s", got)
	}
}

type unwrapOnly struct{ w http.ResponseWriter }

func (u unwrapOnly) Header() http.Header         { return u.w.Header() }
func (u unwrapOnly) Write(b []byte) (int, error) { return u.w.Write(b) }
func (u unwrapOnly) WriteHeader(s int)           { u.w.WriteHeader(s) }
func (u unwrapOnly) Unwrap() http.ResponseWriter { return u.w }

func TestUpgradeChecks(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Config)
		path    string
		header  http.Header
		protos  []string
		status  int
		noProto bool
	}{
		{name: "version 2.0", path: "/ws?version=2.0", status: 101},
		{name: "no version", path: "/ws", status: 101},
		{name: "bad version", path: "/ws?version=1.1;drop", status: 400},
		{name: "two versions", path: "/ws?version=1.1&version=2.0", status: 400},
		{name: "same-host origin", header: http.Header{"Origin": {"http://HOST"}}, status: 101},
		{name: "foreign origin", header: http.Header{"Origin": {"http://evil.example"}}, status: 403},
		{name: "allowed origin", mod: func(c *Config) { c.Transport.AllowedOrigins = []string{"https://app.example"} },
			header: http.Header{"Origin": {"https://app.example"}}, status: 101},
		{name: "origin not in the list", mod: func(c *Config) { c.Transport.AllowedOrigins = []string{"https://app.example"} },
			header: http.Header{"Origin": {"https://app.example.evil"}}, status: 403},
		{name: "unsupported sub-protocol", protos: []string{"Other"}, status: 400},
		{name: "configured sub-protocol", mod: func(c *Config) { c.Transport.Subprotocols = []string{"ZenithJson"} }, protos: []string{"ZenithJson"}, status: 101},
		{name: "no sub-protocol", noProto: true, status: 101},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, tt.mod)
			path := tt.path
			if path == "" {
				path = "/ws?version=1.1"
			}
			h := http.Header{}
			for k, v := range tt.header {
				h[k] = []string{strings.ReplaceAll(v[0], "HOST", strings.TrimPrefix(e.srv.URL, "http://"))}
			}
			d := &websocket.Dialer{Subprotocols: []string{DefaultSubprotocol}}
			if tt.protos != nil {
				d.Subprotocols = tt.protos
			}
			if tt.noProto {
				d.Subprotocols = nil
			}
			c, resp, err := d.Dial("ws"+strings.TrimPrefix(e.srv.URL, "http")+path, h)
			if resp == nil || resp.StatusCode != tt.status {
				t.Fatalf("got %v (%v), want %d", resp, err, tt.status)
			}
			if c != nil {
				c.Close()
			}
		})
	}
}

// TestAccessTokenReturnedOnlyToPermittedClients: the Identify reply carries
// the token only for the OAuth clients ReturnAccessToken names.
func TestAccessTokenReturnedOnlyToPermittedClients(t *testing.T) {
	tokB64 := base64.StdEncoding.EncodeToString([]byte(tokDemo))
	for _, tt := range []struct {
		name    string
		allowed []string
		want    bool
	}{
		{"not configured", nil, false},
		{"another client", []string{"web"}, false},
		{"the token's client", []string{"web", "demo-app"}, true},
		{"every client", []string{"*"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, func(c *Config) { c.Auth.ReturnAccessToken = tt.allowed })
			c := e.dial(nil)
			got := roundTrip(t, c, authToken("Bearer", tokDemo))
			if has := strings.Contains(got, `"AccessToken":"`+tokB64+`"`); has != tt.want {
				t.Fatalf("AccessToken in the reply: %v, want %v: %s", has, tt.want, got)
			}
			if !strings.Contains(got, `"Result":"Success"`) {
				t.Fatalf("reply %s", got)
			}
		})
	}
}
