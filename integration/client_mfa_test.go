package integration

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base32"
	be "encoding/binary"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// Trading and OrderPad need a second factor in the demo (second_factor in
// Caddyfile.example): the password grant never gets them. A test reaches
// them as trader through the code flow with the TOTP code of trader's
// DEMO-ONLY secret (TradingToken), or as the DEMO-ONLY client
// demo-trading-desk with client credentials (DeskToken), whose sub is its
// client ID and whose own account is DESK-300001.
const (
	// traderTOTPSecret is trader's DEMO-ONLY TOTP secret (examples/users.json).
	traderTOTPSecret = "E33OVL22VNZZTWPFWHF7SGK5KP3FNYK6"
	// deskClient and deskSecret are Caddyfile.example's DEMO-ONLY trading desk.
	deskClient = "demo-trading-desk"
	deskSecret = "demo-desk-secret"
	// tradingScope is what TradingToken asks for: every scope trader holds,
	// as the password grant without a scope gave before Trading and
	// OrderPad needed a second factor.
	tradingScope = "openid profile email offline_access Service/Market Service/News Service/Trading Service/OrderPad"
)

// totpCode is the RFC 6238 code of the base32 secret for step: HMAC-SHA-1
// over the step, dynamic truncation, six digits (RFC 4226 §5.3), written
// here from the RFCs since the tests import no package of the module.
func totpCode(t testing.TB, secret string, step int64) string {
	t.Helper()
	key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret)
	if err != nil {
		t.Fatal(err)
	}
	var msg [8]byte
	be.BigEndian.PutUint64(msg[:], uint64(step))
	m := hmac.New(sha1.New, key)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	return fmt.Sprintf("%06d", (be.BigEndian.Uint32(sum[off:])&0x7fffffff)%1_000_000)
}

// totpSteps are the last TOTP step used per issuer: a step's code is
// accepted once per user on a store, and the instances of a test that
// share one share its issuer.
var totpSteps = struct {
	sync.Mutex
	last map[string]int64
}{last: map[string]int64{}}

// nextTOTPCode is a code of trader's secret that g's store has not
// accepted yet: of now's step or, when that one was used on g's issuer,
// the next (the server accepts one step either side of its own, so either
// holds across a step's end), waiting when both were used.
func nextTOTPCode(t testing.TB, g *Gatehouse) string {
	t.Helper()
	totpSteps.Lock()
	defer totpSteps.Unlock()
	step := func(at time.Time) int64 { return at.Unix() / 30 }
	next := max(step(time.Now()), totpSteps.last[g.Issuer]+1)
	if wait := time.Until(time.Unix((next-1)*30, 0)); wait > 0 {
		time.Sleep(wait + 100*time.Millisecond) // next is then within one step of now
	}
	totpSteps.last[g.Issuer] = next
	return totpCode(t, traderTOTPSecret, next)
}

// factor submits the second-factor form p with code.
func (b *browser) factor(p page, code string) page {
	b.t.Helper()
	if p.status != http.StatusOK || !strings.Contains(p.body, `action="/connect/login/factor"`) {
		b.t.Fatalf("not the second-factor form: %d %v %.300s", p.status, p.location, p.body)
	}
	v := p.fields()
	v.Set("code", code)
	return b.post("/connect/login/factor", v)
}

// TradingToken is a token response for trader with Trading and OrderPad
// (tradingScope): the code flow of demo-app with PKCE, trader's password
// on the login page, a TOTP code on the second-factor form, the exchange.
func (g *Gatehouse) TradingToken(t testing.TB) tokenResponse {
	t.Helper()
	b := newBrowser(t, g)
	verifier := oauth2.GenerateVerifier()
	redirect := g.Issuer + "/demo/callback"
	p := b.login(b.get(codeURL(g, verifier, "scope", tradingScope, "redirect_uri", redirect)), "trader", "trader")
	back := b.factor(p, nextTOTPCode(t, g)).params(t, false)
	if back.Get("code") == "" {
		t.Fatalf("no code after the second factor: %v", back)
	}
	g.AddSecret(back.Get("code"))
	resp, body := g.PostToken(t, url.Values{"grant_type": {"authorization_code"}, "client_id": {publicClient},
		"code": {back.Get("code")}, "redirect_uri": {redirect}, "code_verifier": {verifier}}, "", "")
	tok := decodeToken(t, resp, body)
	if !sameScopes(tok.Scope, strings.Fields(tradingScope)) {
		t.Fatalf("trader's token after a second factor: scope %q, want %q", tok.Scope, tradingScope)
	}
	return tok
}

// DeskToken is a client-credentials token response of the DEMO-ONLY
// trading desk (Basic), with every scope it may have.
func (g *Gatehouse) DeskToken(t testing.TB) tokenResponse {
	t.Helper()
	resp, body := g.PostToken(t, url.Values{"grant_type": {"client_credentials"}}, deskClient, deskSecret)
	return decodeToken(t, resp, body)
}

// TestTradingNeedsASecondFactor: in the demo, trader's password grant
// leaves Trading and OrderPad out, and asking for them by name is
// invalid_scope; the code flow with a TOTP code of trader's seeded secret
// gets them, with amr naming the one-time password, and so does the
// trading desk's client credentials, its sub its client ID: it places an
// order in its own account (the query service makes it the owner), not in
// trader's, and the socket's Trading controller shows it its account. It
// failed when the users file's totp_secret was not seeded (no
// second-factor form: a token without them) and before Caddyfile.example
// named the scopes in second_factor (the password grant kept them).
func TestTradingNeedsASecondFactor(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	if tok := g.PasswordGrant(t, "trader", "trader"); strings.Contains(tok.Scope, "Service/Trading") || strings.Contains(tok.Scope, "Service/OrderPad") {
		t.Fatalf("trader's password grant: scope %q, want neither Trading nor OrderPad", tok.Scope)
	}
	resp, body := g.PostToken(t, url.Values{"grant_type": {"password"}, "username": {"trader"}, "password": {"trader"},
		"client_id": {publicClient}, "scope": {"openid Service/Trading"}}, "", "")
	if e := decodeError(t, resp, body); e.Error != "invalid_scope" {
		t.Fatalf("trader's password grant asking for Trading: %d %s, want invalid_scope", resp.StatusCode, body)
	}
	tok := g.TradingToken(t)
	_, claims := decodeJWT(t, tok.AccessToken)
	if amr := fmt.Sprint(claims["amr"]); !strings.Contains(amr, "otp") || !strings.Contains(amr, "mfa") || claims["sub"] != subjectOf(t, "trader") {
		t.Fatalf("trader's token after a second factor: sub %v, amr %v", claims["sub"], claims["amr"])
	}
	desk := g.DeskToken(t)
	_, claims = decodeJWT(t, desk.AccessToken)
	if !sameScopes(desk.Scope, []string{"Service/Market", "Service/Trading", "Service/OrderPad"}) || claims["sub"] != deskClient {
		t.Fatalf("the desk's token: scope %q, sub %v", desk.Scope, claims["sub"])
	}
	order := `{"AccountId":"DESK-300001","Code":"BHP","Exchange":"ASX","Side":"Buy","Quantity":10,"Price":37.5}`
	if resp, _, body := g.query(t, desk.AccessToken, "/query/Order/insert", "application/json", order); resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != `{"RowsAffected":1}` {
		t.Fatalf("the desk's order: %d %s", resp.StatusCode, body)
	}
	_, r, rows := g.query(t, desk.AccessToken, "/query/Order/select?columns=AccountId,Owner", "application/json", `[]`)
	if len(r.Rows) != 1 || toText(r.Rows[0][0]) != "DESK-300001" || toText(r.Rows[0][1]) != deskClient {
		t.Fatalf("the desk's orders: %s", rows)
	}
	traders := strings.Replace(order, "DESK-300001", "TRD-200001", 1)
	if resp, _, body := g.query(t, desk.AccessToken, "/query/Order/insert", "application/json", traders); resp.StatusCode == http.StatusOK {
		t.Fatalf("the desk's order in trader's account: %d %s", resp.StatusCode, body)
	}
	c := liveSession(t, g, "desk", desk.AccessToken)
	if m := c.request(msg("Trading", "QueryAccounts", "Publish", "2"), "2"); m.Action == "Error" || !strings.Contains(string(m.Data), "DESK-300001") {
		t.Fatalf("QueryAccounts as the desk: %s, want its account", m)
	}
}
