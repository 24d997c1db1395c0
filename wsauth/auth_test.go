package wsauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// realVerifier is the identity server's verifier as the gateway's
// Verifier, as the Caddy module wires it.
type realVerifier struct{ v *verify.Verifier }

func (r realVerifier) VerifyAccessToken(ctx context.Context, token string) (Identity, error) {
	id, err := r.v.Verify(ctx, token)
	if err != nil {
		if ve, ok := errors.AsType[*verify.Error](err); ok && ve.Reason != verify.ReasonKeysUnavailable {
			return Identity{}, &Refusal{Reason: string(ve.Reason)}
		}
		return Identity{}, err
	}
	return Identity{Subject: id.Subject, ClientID: id.ClientID, Scopes: id.Scopes, Expiry: id.Expiry, Token: token}, nil
}

// TestHostileAuthTokensRejected: Every hostile token of
// the verifier's table (an id_token, another audience, another issuer,
// alg none, foreign keys, a second spelling of a good token, an opaque
// string such as a refresh token, ...) sent in an AuthToken message, as
// raw text and Base-64 encoded (the rule of docs/api-surface.md §2.4), gets
// Result Reject (Rejected in the motif profile) and opens no backend leg;
// a good token in either spelling is accepted, and its AccessToken is
// returned only to a client ReturnAccessToken names.
func TestHostileAuthTokensRejected(t *testing.T) {
	const issuerURL = "https://issuer.test"
	is := verifytest.NewIssuer(t, issuerURL, time.Now)
	v, err := verify.New(t.Context(), verify.Config{Issuer: issuerURL, Keys: is})
	if err != nil {
		t.Fatal(err)
	}
	for _, motif := range []bool{false, true} {
		e := newTestEnv(t, func(c *Config) {
			c.Hooks.Verifier, c.Hooks.Now = realVerifier{v}, time.Now
			c.Profile.Motif = motif
			c.Auth.ReturnAccessToken = []string{"motif-web"}
		})
		topic, reject := `"Topic":"Identify"`, `{"Result":"Reject"}`
		if motif {
			topic, reject = `"Topic":"AuthToken"`, `{"Result":"Rejected"}`
		}
		send := func(tok string) string {
			c := e.dial(nil)
			q, _ := json.Marshal(tok)
			return roundTrip(t, c, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":1,"Data":{"Provider":"Bearer","AccessToken":`+string(q)+`}}`)
		}
		for _, hc := range is.Hostile(policy.ScopeMarket, policy.ScopeTrading) {
			for _, spelling := range []string{hc.Token, base64.StdEncoding.EncodeToString([]byte(hc.Token))} {
				got := send(spelling)
				if !strings.Contains(got, topic) || !strings.HasSuffix(got, `"Data":`+reject+`}`) {
					t.Errorf("motif %v, %s: %s", motif, hc.Name, got)
				}
			}
		}
		if n := e.backend.upgrades(); n != 0 {
			t.Fatalf("motif %v: %d backend legs opened for refused tokens", motif, n)
		}
		good := is.Token("alice", policy.ScopeMarket) // client test-client: not in ReturnAccessToken
		for _, spelling := range []string{good, base64.StdEncoding.EncodeToString([]byte(good))} {
			got := send(spelling)
			if !strings.Contains(got, `"Result":"Success"`) || strings.Contains(got, `"AccessToken"`) {
				t.Errorf("motif %v, good token: %s", motif, got)
			}
		}
	}
}
