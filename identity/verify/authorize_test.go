package verify_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/verify"
)

func bearerRequest(token string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/quotes", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// written is what Refusal.Write sent.
type written struct {
	status int
	header http.Header
	body   map[string]string
	raw    string
}

func write(t *testing.T, f *verify.Refusal) written {
	t.Helper()
	rec := httptest.NewRecorder()
	f.Write(rec)
	w := written{status: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if err := json.Unmarshal(rec.Body.Bytes(), &w.body); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	return w
}

// Every way Authorize refuses, with the exact status, challenge and body a
// client reads (RFC 6750 §3).
func TestAuthorizeRefusals(t *testing.T) {
	f := newFixture(t)
	req := verify.Requirement{Scopes: []string{"Service/Market", "Service/News"}}
	good := f.issuer.Token("alice", "Service/Market", "Service/News")
	malformed := func(values ...string) *http.Request {
		r := bearerRequest("")
		r.Header["Authorization"] = values
		return r
	}
	queryToken := httptest.NewRequest(http.MethodGet, "/api/quotes?access_token="+good, nil)
	expired := f.issuer.Token("alice", "Service/Market", "Service/News")
	f.now = f.now.Add(2 * time.Hour) // expired is now past its exp
	good = f.issuer.Token("alice", "Service/Market", "Service/News")
	revoked := f.issuer.Token("bob", "Service/Market", "Service/News")
	f.revs.revoke("jti-bob-Service/Market+Service/News")
	if err := f.v.RefreshRevocations(t.Context()); err != nil {
		t.Fatal(err)
	}

	const (
		noTokenChallenge = `Bearer realm="gatehouse"`
		malformedBody    = `{"error":"invalid_request","error_description":"the Authorization header is malformed"}` + "\n"
		malformedChall   = `Bearer realm="gatehouse", error="invalid_request", error_description="the Authorization header is malformed"`
	)
	tests := []struct {
		name      string
		r         *http.Request
		req       verify.Requirement
		status    int
		reason    verify.Reason
		challenge string
		body      string
	}{
		{"no token", bearerRequest(""), req, 401, verify.ReasonNoToken, noTokenChallenge,
			`{"error_description":"this resource needs an access token"}` + "\n"},
		{"token in the query string", queryToken, req, 401, verify.ReasonNoToken, noTokenChallenge,
			`{"error_description":"this resource needs an access token"}` + "\n"},
		{"basic scheme", malformed("Basic YWxpY2U6cHc="), req, 400, verify.ReasonMalformedHeader, malformedChall, malformedBody},
		{"bearer without token", malformed("Bearer "), req, 400, verify.ReasonMalformedHeader, malformedChall, malformedBody},
		{"two tokens", malformed("Bearer a b"), req, 400, verify.ReasonMalformedHeader, malformedChall, malformedBody},
		{"repeated header", malformed("Bearer a", "Bearer b"), req, 400, verify.ReasonMalformedHeader, malformedChall, malformedBody},
		{"expired", bearerRequest(expired), req, 401, verify.ReasonExpired,
			`Bearer realm="gatehouse", error="invalid_token", error_description="the access token expired"`,
			`{"error":"invalid_token","error_description":"the access token expired"}` + "\n"},
		{"revoked", bearerRequest(revoked), req, 401, verify.ReasonRevoked,
			`Bearer realm="gatehouse", error="invalid_token", error_description="the access token was revoked"`,
			`{"error":"invalid_token","error_description":"the access token was revoked"}` + "\n"},
		{"missing scope", bearerRequest(f.issuer.Token("alice", "Service/Market")), req, 403, verify.ReasonInsufficientScope,
			`Bearer realm="gatehouse", error="insufficient_scope", error_description="the access token lacks a required scope", scope="Service/Market Service/News"`,
			`{"error":"insufficient_scope","error_description":"the access token lacks a required scope"}` + "\n"},
		{"realm", bearerRequest(""), verify.Requirement{Realm: "market data"}, 401, verify.ReasonNoToken, `Bearer realm="market data"`,
			`{"error_description":"this resource needs an access token"}` + "\n"},
		{"any scope, none granted", bearerRequest(f.issuer.Token("alice", "Service/Trading")),
			verify.Requirement{Scopes: []string{"Service/News", "Service/OrderPad"}, AnyScope: true, Realm: "news"}, 403, verify.ReasonInsufficientScope,
			`Bearer realm="news", error="insufficient_scope", error_description="the access token lacks a required scope", scope="Service/News Service/OrderPad"`,
			`{"error":"insufficient_scope","error_description":"the access token lacks a required scope"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, refusal := f.v.Authorize(tt.r, tt.req)
			if id != nil || refusal == nil {
				t.Fatalf("passed as %q with %q", id.Subject, id.Scopes)
			}
			if refusal.Reason != tt.reason {
				t.Errorf("reason %s, want %s", refusal.Reason, tt.reason)
			}
			w := write(t, refusal)
			if w.status != tt.status {
				t.Errorf("status %d, want %d", w.status, tt.status)
			}
			if got := w.header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tt.challenge)
			}
			if got := w.header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q", got)
			}
			if got := w.header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
			if w.raw != tt.body {
				t.Errorf("body %q, want %q", w.raw, tt.body)
			}
		})
	}
	if id, refusal := f.v.Authorize(bearerRequest(good), req); refusal != nil || id.Subject != "alice" {
		t.Fatalf("good token refused: %+v", refusal)
	}
}

// The shared hostile table, through Authorize: each token is refused as
// invalid_token, with its own reason, even where its scopes would do.
func TestAuthorizeHostile(t *testing.T) {
	f := newFixture(t)
	req := verify.Requirement{Scopes: []string{"Service/Market"}}
	for _, tc := range f.issuer.Hostile("Service/Market") {
		t.Run(tc.Name, func(t *testing.T) {
			id, refusal := f.v.Authorize(bearerRequest(tc.Token), req)
			if id != nil || refusal == nil {
				t.Fatalf("passed as %q with %q", id.Subject, id.Scopes)
			}
			if refusal.Reason != tc.Reason || refusal.Status != http.StatusUnauthorized || refusal.Code != verify.BearerInvalidToken {
				t.Fatalf("refusal %+v, want 401 invalid_token for %s", refusal, tc.Reason)
			}
			w := write(t, refusal)
			if got := w.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Bearer realm="gatehouse", error="invalid_token", error_description="the access token `) {
				t.Errorf("WWW-Authenticate %q", got)
			}
			if w.body["error"] != "invalid_token" || w.body["error_description"] == "" {
				t.Errorf("body %q", w.raw)
			}
		})
	}
}

func TestAuthorizeScopes(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name   string
		req    verify.Requirement
		scopes []string
		pass   bool
	}{
		{"no scope required", verify.Requirement{}, nil, true},
		{"all granted", verify.Requirement{Scopes: []string{"a", "b"}}, []string{"b", "c", "a"}, true},
		{"one missing", verify.Requirement{Scopes: []string{"a", "b"}}, []string{"a"}, false},
		{"any of them", verify.Requirement{Scopes: []string{"a", "b"}, AnyScope: true}, []string{"b"}, true},
		{"none of them", verify.Requirement{Scopes: []string{"a", "b"}, AnyScope: true}, []string{"c"}, false},
		{"prefix is not a scope", verify.Requirement{Scopes: []string{"Service/Market"}}, []string{"Service/Mark"}, false},
		{"case matters", verify.Requirement{Scopes: []string{"Service/Market"}}, []string{"service/market"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, refusal := f.v.Authorize(bearerRequest(f.issuer.Token("alice", tt.scopes...)), tt.req)
			if (refusal == nil) != tt.pass || (id != nil) != tt.pass {
				t.Errorf("passed: %t, want %t (refusal %+v)", refusal == nil, tt.pass, refusal)
			}
		})
	}
}

func TestRequirementValidate(t *testing.T) {
	tests := []struct {
		name string
		req  verify.Requirement
		want string // "" when valid
	}{
		{"empty", verify.Requirement{}, ""},
		{"full", verify.Requirement{Scopes: []string{"Service/Market", "openid"}, AnyScope: true, Realm: "market data"}, ""},
		{"empty scope", verify.Requirement{Scopes: []string{""}}, `bad scope ""`},
		{"scope with space", verify.Requirement{Scopes: []string{"a b"}}, `bad scope "a b"`},
		{"scope with tab", verify.Requirement{Scopes: []string{"a\tb"}}, `bad scope`},
		{"scope with quote", verify.Requirement{Scopes: []string{`a"b`}}, `bad scope`},
		{"scope with backslash", verify.Requirement{Scopes: []string{`a\b`}}, `bad scope`},
		{"non-ASCII scope", verify.Requirement{Scopes: []string{"Märkte"}}, `bad scope`},
		{"any_scope alone", verify.Requirement{AnyScope: true}, "any_scope without scopes"},
		{"realm with quote", verify.Requirement{Realm: `a"b`}, "realm"},
		{"realm with backslash", verify.Requirement{Realm: `a\b`}, "realm"},
		{"realm with newline", verify.Requirement{Realm: "a\nb"}, "realm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("no error, want one containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestQuoteSafe(t *testing.T) {
	for s, want := range map[string]bool{
		"": true, "market data": true, "Service/Market!~": true,
		`a"b`: false, `a\b`: false, "a\tb": false, "a\x7fb": false, "é": false,
	} {
		if got := verify.QuoteSafe(s); got != want {
			t.Errorf("QuoteSafe(%q) = %t, want %t", s, got, want)
		}
	}
	// A challenge never carries what QuoteSafe refuses.
	got := verify.Challenge("a\"b", "c\\d", "e\nf", "g\u00e9h")
	if want := `Bearer realm="ab", error="cd", error_description="ef", scope="gh"`; got != want {
		t.Errorf("Challenge %q, want %q", got, want)
	}
}
