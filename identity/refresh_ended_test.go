package identity

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/tokens"
)

// endedStore tells of every subject that its sessions were ended after
// any authentication, without revoking its families: as a RevokeSubject
// that landed while a family was being created from a grant authenticated
// before it (a code, a device approval) would leave that family.
type endedStore struct{ store.Store }

func (s endedStore) RefreshState(ctx context.Context, id string) (store.RefreshState, error) {
	st, err := s.Store.RefreshState(ctx, id)
	st.SessionsEnded = err == nil && !st.Family.AuthTime.IsZero()
	return st, err
}

func (s endedStore) AccessTokenRevoked(ctx context.Context, jti, familyID, subject string, iat time.Time) (bool, error) {
	if jti == "" && familyID == "" && subject != "" {
		return true, nil
	}
	return s.Store.AccessTokenRevoked(ctx, jti, familyID, subject, iat)
}

// TestRefreshOfEndedSessionsRefused: a refresh of a family whose user's
// sessions were ended after its authentication is refused, invalid_grant,
// on the constant scheme's path (whose one read, RefreshState, tells it)
// and on a legacy family's (which asks AccessTokenRevoked), and nothing
// rotates. It failed when grantOf ignored RefreshState.SessionsEnded, and
// when refreshGrant no longer asked.
func TestRefreshOfEndedSessionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		token func(t *testing.T, f *fixture) string
	}{
		{"constant", func(t *testing.T, f *fixture) string {
			return f.login("demo", "demo-pw").str("refresh_token")
		}},
		{"legacy", func(t *testing.T, f *fixture) string {
			now := f.clock.Now()
			legacy := "legacy-refresh-token-of-the-first-scheme"
			fam := store.RefreshFamily{ID: "legacy-fam", ClientID: "app", Subject: "sub-demo",
				Scopes: []string{"openid", "offline_access"}, AuthTime: now, Created: now, ExpiresAt: now.Add(24 * time.Hour)}
			err := f.st.(store.LegacySeeder).SeedLegacyFamily(t.Context(), fam,
				[]store.RefreshToken{{Hash: tokens.HashToken(legacy), IssuedAt: now, ExpiresAt: now.Add(time.Hour)}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return legacy
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rt := tc.token(t, f)
			if rt == "" {
				t.Fatal("no refresh token")
			}
			f.serveOn(endedStore{f.st})
			res := f.refresh("app", rt)
			if res.status != 400 || res.str("error") != "invalid_grant" || !strings.Contains(res.str("error_description"), "sessions were ended") {
				t.Fatalf("refresh after the sessions ended: %d %q %q", res.status, res.str("error"), res.str("error_description"))
			}
			// Nothing rotated: the same token refreshes once the store
			// no longer tells of an ending.
			f.serveOn(f.st)
			if res := f.refresh("app", rt); res.status != 200 {
				t.Fatalf("the refused refresh rotated the family: %d %q", res.status, res.str("error_description"))
			}
		})
	}
}
