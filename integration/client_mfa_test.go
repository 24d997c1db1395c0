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
