package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

const testIssuerURL = "https://issuer.test"

// newTestAuthHandler returns h set up with a verifier of is's tokens.
func newTestAuthHandler(t *testing.T, is *verifytest.Issuer, h *AuthHandler) *AuthHandler {
	t.Helper()
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	v, err := verify.New(context.Background(), verify.Config{Issuer: is.URL, Keys: is})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.setUp(v, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	return h
}

// authResult is what serveAuth saw.
type authResult struct {
	rec    *httptest.ResponseRecorder
	next   bool        // next was called
	header http.Header // the request headers next got
	repl   *caddy.Replacer
}

// serveAuth serves req through h, as Caddy would (with a replacer).
func serveAuth(t *testing.T, h *AuthHandler, req *http.Request) authResult {
	t.Helper()
	repl := caddy.NewReplacer()
	req = req.WithContext(context.WithValue(req.Context(), caddy.ReplacerCtxKey, repl))
	res := authResult{rec: httptest.NewRecorder(), repl: repl}
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		res.next, res.header = true, r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	if err := h.ServeHTTP(res.rec, req, next); err != nil {
		t.Fatal(err)
	}
	return res
}

func bearerRequest(token string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/quotes", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// checkRefusal checks a refusal's status, challenge and body.
func checkRefusal(t *testing.T, res authResult, status int, code, challenge string) {
	t.Helper()
	if res.next {
		t.Fatal("the request passed")
	}
	if res.rec.Code != status {
		t.Errorf("status %d, want %d", res.rec.Code, status)
	}
	if got := res.rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, challenge) {
		t.Errorf("WWW-Authenticate %q, want it to start with %q", got, challenge)
	}
	if got := res.rec.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q", got)
	}
	var body map[string]string
	if err := json.Unmarshal(res.rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", res.rec.Body, err)
	}
	if body["error"] != code || body["error_description"] == "" {
		t.Errorf("body %v, want error %q and a description", body, code)
	}
}

// The handler answers with verify's refusals (their table is in
// verify's TestAuthorizeRefusals and TestAuthorizeHostile); here, that
// each kind reaches the client and stops the request.
func TestAuthHandlerRefusals(t *testing.T) {
	is := verifytest.NewIssuer(t, testIssuerURL, time.Now)
	h := newTestAuthHandler(t, is, &AuthHandler{Scopes: []string{"Service/Market", "Service/News"}})

	t.Run("no token", func(t *testing.T) {
		res := serveAuth(t, h, bearerRequest(""))
		checkRefusal(t, res, http.StatusUnauthorized, "", `Bearer realm="gatehouse"`)
		if got := res.rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="gatehouse"` {
			t.Errorf("WWW-Authenticate %q: no error code without a token (RFC 6750 §3.1)", got)
		}
	})
	t.Run("token in the query string", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, "/api/quotes?access_token="+is.Token("alice", "Service/Market", "Service/News"), nil)
		checkRefusal(t, serveAuth(t, h, r), http.StatusUnauthorized, "", `Bearer realm="gatehouse"`)
	})
	t.Run("malformed header", func(t *testing.T) {
		r := bearerRequest("")
		r.Header["Authorization"] = []string{"Bearer a", "Bearer b"}
		checkRefusal(t, serveAuth(t, h, r), http.StatusBadRequest, "invalid_request", `Bearer realm="gatehouse", error="invalid_request"`)
	})
	t.Run("refused token", func(t *testing.T) {
		c := is.Hostile("Service/Market", "Service/News")[0]
		checkRefusal(t, serveAuth(t, h, bearerRequest(c.Token)), http.StatusUnauthorized, "invalid_token",
			`Bearer realm="gatehouse", error="invalid_token", error_description="the access token`)
	})
	t.Run("missing scope", func(t *testing.T) {
		res := serveAuth(t, h, bearerRequest(is.Token("alice", "Service/Market")))
		checkRefusal(t, res, http.StatusForbidden, "insufficient_scope", `Bearer realm="gatehouse", error="insufficient_scope"`)
		if got := res.rec.Header().Get("WWW-Authenticate"); !strings.HasSuffix(got, `scope="Service/Market Service/News"`) {
			t.Errorf("WWW-Authenticate %q lacks the required scopes", got)
		}
	})
	t.Run("any scope", func(t *testing.T) {
		h := newTestAuthHandler(t, is, &AuthHandler{Scopes: []string{"a", "b"}, AnyScope: true})
		if res := serveAuth(t, h, bearerRequest(is.Token("alice", "b"))); !res.next {
			t.Errorf("refused: %d %s", res.rec.Code, res.rec.Body)
		}
	})
}

// A refusal is logged at Debug with its reason and cause, never the token.
func TestAuthHandlerLogsNoToken(t *testing.T) {
	is := verifytest.NewIssuer(t, testIssuerURL, time.Now)
	h := newTestAuthHandler(t, is, &AuthHandler{Scopes: []string{"Service/Market"}})
	core, logs := observer.New(zapcore.DebugLevel)
	h.logger = zap.New(core)
	var tokens []string
	for _, c := range is.Hostile("Service/Market") {
		tokens = append(tokens, c.Token)
		serveAuth(t, h, bearerRequest(c.Token))
	}
	short := is.Token("alice") // lacks the scope
	tokens = append(tokens, short)
	serveAuth(t, h, bearerRequest(short))

	entries := logs.All()
	if len(entries) != len(tokens) {
		t.Fatalf("%d log entries for %d refusals", len(entries), len(tokens))
	}
	for _, e := range entries {
		fields := e.ContextMap()
		if e.Message != "access refused" || fields["reason"] == "" || fields["status"] == nil {
			t.Errorf("entry %q %v", e.Message, fields)
		}
		if leaksToken(fmt.Sprint(fields), tokens) {
			t.Errorf("the log of %v shows a token segment", fields["reason"])
		}
	}
}

// leaksToken reports whether text holds a segment of one of the tokens: a
// segment is as good as the token to a reader.
func leaksToken(text string, tokens []string) bool {
	for _, tok := range tokens {
		for seg := range strings.SplitSeq(tok, ".") {
			if len(seg) >= 16 && strings.Contains(text, seg) {
				return true
			}
		}
	}
	return false
}

func TestAuthHandlerIdentity(t *testing.T) {
	is := verifytest.NewIssuer(t, testIssuerURL, time.Now)
	h := newTestAuthHandler(t, is, &AuthHandler{
		Scopes: []string{"Service/Market"},
		Realm:  "market",
		Headers: map[string][]string{
			"X-Auth-User":   {"{http.auth.user.id}"},
			"X-Auth-Client": {"client={http.auth.user.client_id}"},
			"X-Auth-Claims": {"{http.auth.user.claims.email}", "{http.auth.user.claims.absent}", "{http.auth.user.claims.evil}"},
		},
		StripHeaders:       []string{"X-Auth-Role"},
		StripAuthorization: true,
	})
	claims := is.Claims("alice", "Service/Market", "Service/News")
	claims["email"] = "alice@example.com"
	claims["evil"] = "x\r\nX-Auth-Role: admin"
	claims["level"] = 3
	token := verifytest.Sign(is.Header(), claims, is.Private)

	r := bearerRequest(token)
	r.Header.Add("X-Auth-User", "admin") // spoofed copies, in every spelling
	r.Header["x-auth-user"] = []string{"admin"}
	r.Header["X_Auth_User"] = []string{"admin"}
	r.Header.Set("X-Auth-Role", "admin")
	r.Header["X_auth_role"] = []string{"admin"}
	r.Header.Set("X-Other", "kept")
	res := serveAuth(t, h, r)
	if !res.next {
		t.Fatalf("refused: %d %s", res.rec.Code, res.rec.Body)
	}

	want := http.Header{
		"X-Auth-User":   {"alice"},
		"X-Auth-Client": {"client=test-client"},
		"X-Auth-Claims": {"alice@example.com"},
		"X-Other":       {"kept"},
	}
	for name, values := range res.header {
		if w, ok := want[name]; !ok || strings.Join(w, "|") != strings.Join(values, "|") {
			t.Errorf("next got header %s: %q, want %q", name, values, w)
		}
	}
	for name := range want {
		if _, ok := res.header[name]; !ok {
			t.Errorf("next did not get header %s", name)
		}
	}

	for key, want := range map[string]string{
		"http.auth.user.id":            "alice",
		"http.auth.user.client_id":     "test-client",
		"http.auth.user.scopes":        "Service/Market Service/News",
		"http.auth.user.exp":           strconv.FormatInt(claims["exp"].(int64), 10),
		"http.auth.user.claims.email":  "alice@example.com",
		"http.auth.user.claims.level":  "3",
		"http.auth.user.claims.iss":    testIssuerURL,
		"http.auth.user.claims.absent": "",
	} {
		got, _ := res.repl.GetString(key)
		if got != want {
			t.Errorf("{%s} = %q, want %q", key, got, want)
		}
	}
}

func TestClientIP(t *testing.T) {
	tests := []struct {
		name, remote, caddyIP, want string
	}{
		{"remote address", "192.0.2.7:5123", "", "192.0.2.7"},
		{"remote IPv6", "[2001:db8::1]:5123", "", "2001:db8::1"},
		{"caddy client IP", "10.0.0.1:5123", "203.0.113.9", "203.0.113.9"},
		{"no port", "192.0.2.7", "", "192.0.2.7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/connect/token", nil)
			r.RemoteAddr = tt.remote
			if tt.caddyIP != "" {
				vars := map[string]any{caddyhttp.ClientIPVarKey: tt.caddyIP}
				r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
			}
			if got := clientIP(r); got != tt.want {
				t.Errorf("clientIP %q, want %q", got, tt.want)
			}
		})
	}
}
