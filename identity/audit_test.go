package identity

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/audit/audittest"
)

// taken returns a's records so far, each random id (jti, kid, family_id)
// written as its key in capitals, and forgets them.
func taken(a *audittest.Recorder) []string {
	out := a.Take()
	for i, r := range out {
		out[i] = randomID.ReplaceAllStringFunc(r, func(m string) string {
			k, _, _ := strings.Cut(m, "=")
			return k + "=" + strings.ToUpper(k)
		})
	}
	return out
}

var randomID = regexp.MustCompile(`(jti|kid|family_id)=\S+`)

// TestAuditRecordsIdentityEvents: what each action at the identity
// server records, with its exact attributes: the signing key created at
// first start, a token issued by each grant, refused logins (never the
// password; an unknown name not even as a username), revocations, a key
// rotation; and no record holds a token, secret or password. It failed
// when the refresh grant's tokens went unrecorded, and when a refused
// login recorded the name an unknown user typed.
func TestAuditRecordsIdentityEvents(t *testing.T) {
	a := &audittest.Recorder{}
	f := newFixture(t, func(c *Config) { c.Audit = a })
	if got := taken(a); !slices.Equal(got, []string{"key_rotation event=created key=signing kid=KID"}) {
		t.Errorf("at first start: %q", got)
	}
	var secrets []string
	keep := func(r response, keys ...string) response {
		for _, k := range keys {
			if v := r.str(k); v != "" {
				secrets = append(secrets, v)
			}
		}
		return r
	}
	var refresh string
	demoToken := "authentication client_id=app entitlements=[] grant=%s jti=JTI outcome=ok scopes=[openid offline_access Service/Market] sub=sub-demo transport=token"
	tests := []struct {
		name string
		act  func(t *testing.T)
		want []string
	}{
		{"password grant", func(t *testing.T) {
			r := keep(f.login("demo", "demo-pw", "scope", "openid offline_access Service/Market"), "access_token", "refresh_token", "id_token")
			refresh = r.str("refresh_token")
		}, []string{fmt.Sprintf(demoToken, "password")}},
		{"refresh grant", func(t *testing.T) {
			r := keep(f.refresh("app", refresh), "access_token", "refresh_token", "id_token")
			refresh = r.str("refresh_token")
		}, []string{fmt.Sprintf(demoToken, "refresh_token")}},
		{"client credentials", func(t *testing.T) {
			keep(f.post(form("grant_type", "client_credentials"), basic("svc", "svc-secret")), "access_token")
		}, []string{"authentication client_id=svc entitlements=[] grant=client_credentials jti=JTI outcome=ok scopes=[Service/Market] sub=svc transport=token"}},
		{"wrong password", func(t *testing.T) { f.login("demo", "not-demo-pw") },
			[]string{"authentication method=password outcome=reject reason=wrong password source=192.0.2.1 sub=sub-demo username=demo"}},
		{"unknown user", func(t *testing.T) { f.login("demo-pw-typed-as-name", "x") },
			[]string{"authentication method=password outcome=reject reason=unknown user source=192.0.2.1"}},
		{"revocation", func(t *testing.T) {
			if r := f.revoke(form("token", refresh, "client_id", "app")); r.status != 200 {
				t.Fatalf("revocation: %d %s", r.status, r.raw)
			}
		}, []string{"revocation client_id=app family_id=FAMILY_ID sub=sub-demo transport=token what=refresh_token"}},
		{"key rotation", func(t *testing.T) {
			if _, err := f.srv.RotateKeys(context.Background(), "", true); err != nil {
				t.Fatal(err)
			}
		}, []string{"key_rotation event=rotated immediately=true key=signing kid=KID"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.act(t)
			got := taken(a)
			if !slices.Equal(got, tt.want) {
				t.Errorf("records:\n got %q\nwant %q", got, tt.want)
			}
			for _, r := range got {
				for _, s := range append(secrets, "demo-pw", "not-demo-pw", "svc-secret") {
					if strings.Contains(r, s) && !strings.Contains(s, "sub-demo") {
						t.Errorf("a record holds the secret %q: %s", s, r)
					}
				}
			}
		})
	}
}

// TestAuditRefusingRefusesTokens: while the audit refuses, every token
// request is answered 503 temporarily_unavailable, the gateway's password
// entry point too, and nothing is issued or recorded. It failed when the
// token endpoint ignored Refusing.
func TestAuditRefusingRefusesTokens(t *testing.T) {
	a := &audittest.Recorder{}
	f := newFixture(t, func(c *Config) { c.Audit = a })
	taken(a)
	a.Refuse(true)
	for _, r := range []response{f.login("demo", "demo-pw"), f.post(form("grant_type", "client_credentials"), basic("svc", "svc-secret"))} {
		if r.status != 503 || r.str("error") != "temporarily_unavailable" {
			t.Errorf("a token request while the audit refuses: %d %s", r.status, r.raw)
		}
	}
	if _, perr := f.srv.PasswordGrant(context.Background(), "app", "", "demo", "demo-pw", "", "192.0.2.1"); perr == nil || perr.Code != "temporarily_unavailable" {
		t.Errorf("the gateway's password grant while the audit refuses: %v", perr)
	}
	if got := taken(a); len(got) != 0 {
		t.Errorf("recorded while refusing: %q", got)
	}
	a.Refuse(false)
	if r := f.login("demo", "demo-pw"); r.status != 200 {
		t.Errorf("a token request once the audit writes again: %d %s", r.status, r.raw)
	}
}
