package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

// RunBrowser runs the conformance suite of store.BrowserStore (sessions,
// authorization codes, consents and their purge), apart from Run since a
// backend may implement Store without it. open returns a new, empty store
// for the test t and arranges for it to be closed; each subtest calls it
// once.
func RunBrowser(t *testing.T, open func(t *testing.T) store.BrowserStore) {
	for _, g := range browserGroups {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					c.run(t, open(t))
				})
			}
		})
	}
}

type browserCase struct {
	name string
	run  func(t *testing.T, s store.BrowserStore)
}

var browserGroups = []struct {
	name  string
	cases []browserCase
}{
	{"Sessions", sessionCases},
	{"Codes", codeCases},
	{"Consents", consentCases},
	{"DeleteExpiredBrowser", []browserCase{{"Boundaries", testDeleteExpiredBrowser}}},
	{"SessionFamilies", []browserCase{{"FoundBySession", testSessionFamilies}}},
}

// ConsumeConcurrently has n goroutines, spread over stores (several Stores
// sharing one database, as several processes would), use one new code at
// once, each with tokens of its own: exactly one must succeed, every other
// get ErrCodeUsed with the winner's tokens, and every store must read the
// code as used with the winner's tokens and a replay recorded. The stores
// must share an empty database.
func ConsumeConcurrently(t *testing.T, n int, stores ...store.BrowserStore) {
	if len(stores) == 0 {
		t.Fatal("ConsumeConcurrently: no store")
	}
	ctx := Context(t)
	c := authCode("raced")
	wantErr(t, "PutCode", stores[0].PutCode(ctx, c), nil)
	got := make([]store.AuthCode, n)
	issue := func(i int) store.CodeIssue {
		return store.CodeIssue{FamilyID: fmt.Sprintf("fam-%d", i), AccessTokenID: fmt.Sprintf("jti-%d", i),
			AccessTokenExpiresAt: t0.Add(time.Hour + time.Duration(i)*time.Millisecond)}
	}
	errs := concurrently(ctx, t, n, func(i int) error {
		var err error
		got[i], err = stores[i%len(stores)].ConsumeCode(ctx, c.Hash, t0.Add(time.Second), issue(i))
		return err
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("goroutines %d and %d both used the code", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrCodeUsed):
			t.Errorf("goroutine %d: %v, want %v", i, err, store.ErrCodeUsed)
		}
	}
	if winner < 0 {
		t.Fatal("no goroutine used the code")
	}
	want := issue(winner)
	for i := range got {
		if errs[i] == nil || errors.Is(errs[i], store.ErrCodeUsed) {
			equal(t, fmt.Sprintf("tokens goroutine %d read", i), normCode(t, got[i]).CodeIssue, want)
		}
	}
	for i, s := range stores {
		rc := readCode(ctx, t, s, c.Hash)
		equal(t, fmt.Sprintf("tokens store %d reads", i), rc.CodeIssue, want)
		if rc.UsedAt.IsZero() || (n > 1 && rc.ReplayedAt.IsZero()) {
			t.Errorf("store %d reads UsedAt %v, ReplayedAt %v after %d uses", i, rc.UsedAt, rc.ReplayedAt, n)
		}
	}
}

// session is a session as the suite stores it.
func session(name string) store.Session {
	return store.Session{
		Hash: hash("session/" + name), ID: "sid-" + name, Subject: "sub-" + name,
		AuthTime: t0, Created: t0, LastSeen: t0, ExpiresAt: t0.Add(time.Hour),
		AbsoluteExpiresAt: t0.Add(24 * time.Hour), AMR: []string{"pwd", "otp", "mfa"},
	}
}

func normSession(t *testing.T, s store.Session) store.Session {
	t.Helper()
	s.Hash, s.Clients = list(s.Hash), list(s.Clients)
	s.AuthTime = utc(t, "session AuthTime", s.AuthTime)
	s.Created = utc(t, "session Created", s.Created)
	s.LastSeen = utc(t, "session LastSeen", s.LastSeen)
	s.ExpiresAt = utc(t, "session ExpiresAt", s.ExpiresAt)
	s.AbsoluteExpiresAt = utc(t, "session AbsoluteExpiresAt", s.AbsoluteExpiresAt)
	return s
}

func readSession(ctx context.Context, t *testing.T, s store.Sessions, h []byte) store.Session {
	t.Helper()
	got, err := s.Session(ctx, h)
	wantErr(t, "Session", err, nil)
	return normSession(t, got)
}

var sessionCases = []browserCase{
	{"CreateAndRead", func(t *testing.T, s store.BrowserStore) {
		ctx := Context(t)
		want := session("a")
		want.Clients = []string{"app"}
		wantErr(t, "CreateSession", s.CreateSession(ctx, want), nil)
		equal(t, "session", readSession(ctx, t, s, want.Hash), want)
		_, err := s.Session(ctx, hash("session/none"))
		wantErr(t, "Session of an unknown hash", err, store.ErrNotFound)
	}},
	{"Duplicates", func(t *testing.T, s store.BrowserStore) {
		ctx := Context(t)
		a := session("a")
		wantErr(t, "CreateSession", s.CreateSession(ctx, a), nil)
		sameHash := session("b")
		sameHash.Hash = a.Hash
		wantErr(t, "CreateSession with a taken hash", s.CreateSession(ctx, sameHash), store.ErrAlreadyExists)
		sameID := session("c")
		sameID.ID = a.ID
		wantErr(t, "CreateSession with a taken id", s.CreateSession(ctx, sameID), store.ErrAlreadyExists)
		equal(t, "first session", readSession(ctx, t, s, a.Hash), a)
	}},
	{"Touch", func(t *testing.T, s store.BrowserStore) {
		ctx := Context(t)
		want := session("a")
		wantErr(t, "CreateSession", s.CreateSession(ctx, want), nil)
		for i, client := range []string{"app", "", "web", "app"} {
			now := t0.Add(time.Duration(i+1) * time.Minute)
			wantErr(t, "TouchSession", s.TouchSession(ctx, want.Hash, now, now.Add(time.Hour), client), nil)
			want.LastSeen, want.ExpiresAt = now, now.Add(time.Hour)
		}
		want.Clients = []string{"app", "web"}
		equal(t, "touched session", readSession(ctx, t, s, want.Hash), want)
		wantErr(t, "TouchSession of an unknown session",
			s.TouchSession(ctx, hash("session/none"), t0, t0, "app"), store.ErrNotFound)
	}},
	{"Elevate", func(t *testing.T, s store.BrowserStore) {
		ctx := Context(t)
		a, b := session("a"), session("b")
		a.AMR, a.Clients = []string{"pwd"}, []string{"app"}
		wantErr(t, "CreateSession a", s.CreateSession(ctx, a), nil)
		wantErr(t, "CreateSession b", s.CreateSession(ctx, b), nil)
		now := t0.Add(time.Minute)
		newHash := hash("session/a2")
		wantErr(t, "ElevateSession", s.ElevateSession(ctx, a.Hash, newHash, []string{"pwd", "otp", "mfa"}, now), nil)
		_, err := s.Session(ctx, a.Hash)
		wantErr(t, "Session of the old hash", err, store.ErrNotFound)
		want := a
		want.Hash, want.AMR, want.LastSeen = newHash, []string{"pwd", "otp", "mfa"}, now
		equal(t, "elevated session", readSession(ctx, t, s, newHash), want)
		wantErr(t, "ElevateSession of the old hash again",
			s.ElevateSession(ctx, a.Hash, hash("session/a3"), []string{"pwd"}, now), store.ErrNotFound)
		wantErr(t, "ElevateSession onto a taken hash",
			s.ElevateSession(ctx, newHash, b.Hash, []string{"pwd"}, now), store.ErrAlreadyExists)
		equal(t, "the other session", readSession(ctx, t, s, b.Hash), b)
	}},
	{"Delete", func(t *testing.T, s store.BrowserStore) {
		ctx := Context(t)
		a, b := session("a"), session("b")
		wantErr(t, "CreateSession a", s.CreateSession(ctx, a), nil)
		wantErr(t, "CreateSession b", s.CreateSession(ctx, b), nil)
		wantErr(t, "DeleteSession", s.DeleteSession(ctx, a.Hash), nil)
		_, err := s.Session(ctx, a.Hash)
		wantErr(t, "Session after DeleteSession", err, store.ErrNotFound)
		wantErr(t, "DeleteSession again", s.DeleteSession(ctx, a.Hash), nil)
		equal(t, "the other session", readSession(ctx, t, s, b.Hash), b)
		for _, c := range []struct {
			id   string
			want bool
		}{{a.ID, false}, {b.ID, true}, {"none", false}} {
			ok, err := s.SessionExists(ctx, c.id)
			wantErr(t, "SessionExists", err, nil)
			equal(t, "SessionExists "+c.id, ok, c.want)
		}
	}},
	{"RevokeSubjectEndsSessions", func(t *testing.T, s store.BrowserStore) {
		// A changed password or a disabled user ends the user's browser
		// sessions, which outlive the revocation's record (it lasts as long
		// as access tokens do).
		ctx := Context(t)
		rs := subjectRevoker(t, s)
		a1, a2, b := session("a1"), session("a2"), session("b")
		a2.Subject = a1.Subject
		for _, ss := range []store.Session{a1, a2, b} {
			wantErr(t, "CreateSession", s.CreateSession(ctx, ss), nil)
		}
		wantErr(t, "RevokeSubject", rs.RevokeSubject(ctx, a1.Subject, t0.Add(time.Minute), t0.Add(time.Hour)), nil)
		for _, ss := range []store.Session{a1, a2} {
			_, err := s.Session(ctx, ss.Hash)
			wantErr(t, "Session after RevokeSubject", err, store.ErrNotFound)
		}
		equal(t, "another subject's session", readSession(ctx, t, s, b.Hash), b)
	}},
	{"RevokeSubjectEndsUnusedCodes", func(t *testing.T, s store.BrowserStore) {
		// A subject's codes not yet exchanged go with its sessions; a used
		// one stays (its replay is still detected), as does another
		// subject's.
		ctx := Context(t)
		rs := subjectRevoker(t, s)
		unused, used, other := authCode("a"), authCode("a-used"), authCode("b")
		used.Subject = unused.Subject
		for _, c := range []store.AuthCode{unused, used, other} {
			wantErr(t, "PutCode", s.PutCode(ctx, c), nil)
		}
		_, err := s.ConsumeCode(ctx, used.Hash, t0.Add(time.Second), store.CodeIssue{FamilyID: "f", AccessTokenID: "at"})
		wantErr(t, "ConsumeCode", err, nil)
		wantErr(t, "RevokeSubject", rs.RevokeSubject(ctx, unused.Subject, t0.Add(2*time.Second), t0.Add(time.Hour)), nil)
		_, err = s.Code(ctx, unused.Hash)
		wantErr(t, "Code of an unused code after RevokeSubject", err, store.ErrNotFound)
		for _, c := range []store.AuthCode{used, other} {
			_, err := s.Code(ctx, c.Hash)
			wantErr(t, "Code "+string(c.Hash), err, nil)
		}
	}},
	{"DeleteUserEndsSessionsAndConsents", func(t *testing.T, s store.BrowserStore) {
		// A deleted user's browser sessions and consents go with it; another
		// user's stay.
		ctx := Context(t)
		us, ok := s.(interface {
			CreateUser(ctx context.Context, u store.User) error
			DeleteUser(ctx context.Context, username string, now, tokensUntil time.Time) (store.User, error)
		})
		if !ok {
			t.Skip("the store has no users")
		}
		a, b := session("a"), session("b")
		for _, ss := range []store.Session{a, b} {
			wantErr(t, "CreateUser", us.CreateUser(ctx, store.User{Username: "user-" + ss.ID, Subject: ss.Subject,
				PasswordHash: "x", Created: t0, Updated: t0}), nil)
			wantErr(t, "CreateSession", s.CreateSession(ctx, ss), nil)
			wantErr(t, "PutConsent", s.PutConsent(ctx, store.Consent{Subject: ss.Subject, ClientID: "app",
				Scopes: []string{"openid"}, Created: t0}), nil)
		}
		_, err := us.DeleteUser(ctx, "user-"+a.ID, t0.Add(time.Minute), t0.Add(time.Hour))
		wantErr(t, "DeleteUser", err, nil)
		_, err = s.Session(ctx, a.Hash)
		wantErr(t, "Session after DeleteUser", err, store.ErrNotFound)
		_, err = s.Consent(ctx, a.Subject, "app")
		wantErr(t, "Consent after DeleteUser", err, store.ErrNotFound)
		equal(t, "another user's session", readSession(ctx, t, s, b.Hash), b)
		equal(t, "another user's consent", readConsent(ctx, t, s, b.Subject, "app").Subject, b.Subject)
	}},
}

// subjectRevoker is s as the store that revokes subjects it also is; the
// test is skipped when it is not.
func subjectRevoker(t *testing.T, s any) interface {
	RevokeSubject(ctx context.Context, subject string, now, tokensUntil time.Time) error
} {
	t.Helper()
	rs, ok := s.(interface {
		RevokeSubject(ctx context.Context, subject string, now, tokensUntil time.Time) error
	})
	if !ok {
		t.Skip("the store does not revoke subjects")
	}
	return rs
}

// authCode is a code as the suite stores it.
func authCode(name string) store.AuthCode {
	return store.AuthCode{
		Hash: hash("code/" + name), ClientID: "app", RedirectURI: "http://127.0.0.1:5000/cb?x=1",
		Subject: "sub-" + name, Scopes: []string{"openid", "offline_access"}, Nonce: "n-" + name,
		SessionID: "sid-" + name, AuthTime: t0.Add(-time.Minute), AMR: []string{"pwd", "otp", "mfa"},
		CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", CodeChallengeMethod: "S256",
		Entitlements: entitle.MustParse("ASX:quotes"),
		Created:      t0, ExpiresAt: t0.Add(time.Minute), RetainUntil: t0.Add(time.Hour),
	}
}

func normCode(t *testing.T, c store.AuthCode) store.AuthCode {
	t.Helper()
	c.Hash, c.Scopes = list(c.Hash), list(c.Scopes)
	c.AuthTime = utc(t, "code AuthTime", c.AuthTime)
	c.Created = utc(t, "code Created", c.Created)
	c.ExpiresAt = utc(t, "code ExpiresAt", c.ExpiresAt)
	c.RetainUntil = utc(t, "code RetainUntil", c.RetainUntil)
	c.UsedAt = utc(t, "code UsedAt", c.UsedAt)
	c.ReplayedAt = utc(t, "code ReplayedAt", c.ReplayedAt)
	c.AccessTokenExpiresAt = utc(t, "code AccessTokenExpiresAt", c.AccessTokenExpiresAt)
	return c
}

func readCode(ctx context.Context, t *testing.T, s store.Codes, h []byte) store.AuthCode {
	t.Helper()
	got, err := s.Code(ctx, h)
	wantErr(t, "Code", err, nil)
	return normCode(t, got)
}

var codeCases = []browserCase{
	{"PutAndRead", func(t *testing.T, s store.BrowserStore) {
		ctx := Context(t)
		want := authCode("a")
		wantErr(t, "PutCode", s.PutCode(ctx, want), nil)
		equal(t, "code", readCode(ctx, t, s, want.Hash), want)
		wantErr(t, "PutCode again", s.PutCode(ctx, authCode("a")), store.ErrAlreadyExists)
		_, err := s.Code(ctx, hash("code/none"))
		wantErr(t, "Code of an unknown hash", err, store.ErrNotFound)
		plain := authCode("plain")
		plain.CodeChallenge, plain.CodeChallengeMethod, plain.Nonce, plain.SessionID = "", "", "", ""
		wantErr(t, "PutCode without PKCE", s.PutCode(ctx, plain), nil)
		equal(t, "code without PKCE", readCode(ctx, t, s, plain.Hash), plain)
	}},
	{"ConsumeOnce", func(t *testing.T, s store.BrowserStore) {
		ctx := Context(t)
		want := authCode("a")
		wantErr(t, "PutCode", s.PutCode(ctx, want), nil)
		first := store.CodeIssue{FamilyID: "fam-1", AccessTokenID: "jti-1", AccessTokenExpiresAt: t0.Add(time.Hour)}
		got, err := s.ConsumeCode(ctx, want.Hash, t0.Add(time.Second), first)
		wantErr(t, "ConsumeCode", err, nil)
		want.UsedAt, want.CodeIssue = t0.Add(time.Second), first
		equal(t, "code ConsumeCode returned", normCode(t, got), want)
		equal(t, "used code", readCode(ctx, t, s, want.Hash), want)

		// Used again: nothing of the first use changes, the replay is
		// recorded once, at its first time.
		for i := 2; i <= 3; i++ {
			second := store.CodeIssue{FamilyID: fmt.Sprintf("fam-%d", i), AccessTokenID: fmt.Sprintf("jti-%d", i)}
			got, err = s.ConsumeCode(ctx, want.Hash, t0.Add(time.Duration(i)*time.Second), second)
			wantErr(t, "ConsumeCode again", err, store.ErrCodeUsed)
			want.ReplayedAt = t0.Add(2 * time.Second)
			equal(t, "code ConsumeCode returned on a replay", normCode(t, got), want)
			equal(t, "replayed code", readCode(ctx, t, s, want.Hash), want)
		}
		_, err = s.ConsumeCode(ctx, hash("code/none"), t0, first)
		wantErr(t, "ConsumeCode of an unknown code", err, store.ErrNotFound)
	}},
	{"ConsumeConcurrently", func(t *testing.T, s store.BrowserStore) {
		ConsumeConcurrently(t, 16, s)
	}},
}

var consentCases = []browserCase{
	{"PutReadReplaceDelete", func(t *testing.T, s store.BrowserStore) {
		ctx := Context(t)
		_, err := s.Consent(ctx, "alice", "app")
		wantErr(t, "Consent before PutConsent", err, store.ErrNotFound)
		want := store.Consent{Subject: "alice", ClientID: "app", Scopes: []string{"openid", "profile"}, Created: t0}
		wantErr(t, "PutConsent", s.PutConsent(ctx, want), nil)
		other := store.Consent{Subject: "alice", ClientID: "web", Scopes: []string{"email"}, Created: t0,
			ExpiresAt: t0.Add(time.Hour)}
		wantErr(t, "PutConsent to another client", s.PutConsent(ctx, other), nil)
		bob := store.Consent{Subject: "bob", ClientID: "app", Scopes: []string{"openid"}, Created: t0}
		wantErr(t, "PutConsent of another user", s.PutConsent(ctx, bob), nil)
		equal(t, "consent", readConsent(ctx, t, s, "alice", "app"), want)

		want.Scopes, want.Created, want.ExpiresAt = []string{"openid", "profile", "email"}, t0.Add(time.Minute), t0.Add(48*time.Hour)
		wantErr(t, "PutConsent replacing", s.PutConsent(ctx, want), nil)
		equal(t, "replaced consent", readConsent(ctx, t, s, "alice", "app"), want)
		equal(t, "the other client's consent", readConsent(ctx, t, s, "alice", "web"), other)
		equal(t, "the other user's consent", readConsent(ctx, t, s, "bob", "app"), bob)

		wantErr(t, "DeleteConsent", s.DeleteConsent(ctx, "alice", "app"), nil)
		_, err = s.Consent(ctx, "alice", "app")
		wantErr(t, "Consent after DeleteConsent", err, store.ErrNotFound)
		wantErr(t, "DeleteConsent again", s.DeleteConsent(ctx, "alice", "app"), nil)
		equal(t, "the other client's consent after a delete", readConsent(ctx, t, s, "alice", "web"), other)
	}},
}

func readConsent(ctx context.Context, t *testing.T, s store.Consents, subject, client string) store.Consent {
	t.Helper()
	c, err := s.Consent(ctx, subject, client)
	wantErr(t, "Consent", err, nil)
	c.Scopes = list(c.Scopes)
	c.Created = utc(t, "consent Created", c.Created)
	c.ExpiresAt = utc(t, "consent ExpiresAt", c.ExpiresAt)
	return c
}

// testDeleteExpiredBrowser: a record whose expiry is now has expired; one
// a millisecond later has not; a consent without expiry stays.
func testDeleteExpiredBrowser(t *testing.T, s store.BrowserStore) {
	ctx := Context(t)
	now := t0.Add(time.Hour)
	gone, kept := session("gone"), session("kept")
	gone.ExpiresAt, kept.ExpiresAt = now, now.Add(time.Millisecond)
	for _, ss := range []store.Session{gone, kept} {
		wantErr(t, "CreateSession", s.CreateSession(ctx, ss), nil)
	}
	goneCode, keptCode := authCode("gone"), authCode("kept")
	goneCode.RetainUntil = now
	// Past its use deadline but retained: a replay is still recognised.
	keptCode.ExpiresAt, keptCode.RetainUntil = now.Add(-time.Minute), now.Add(time.Millisecond)
	for _, c := range []store.AuthCode{goneCode, keptCode} {
		wantErr(t, "PutCode", s.PutCode(ctx, c), nil)
	}
	for _, c := range []store.Consent{
		{Subject: "gone", ClientID: "app", ExpiresAt: now},
		{Subject: "kept", ClientID: "app", ExpiresAt: now.Add(time.Millisecond)},
		{Subject: "forever", ClientID: "app"},
	} {
		wantErr(t, "PutConsent", s.PutConsent(ctx, c), nil)
	}
	n, err := s.DeleteExpiredBrowser(ctx, now)
	wantErr(t, "DeleteExpiredBrowser", err, nil)
	equal(t, "records removed", n, int64(3))

	_, err = s.Session(ctx, gone.Hash)
	wantErr(t, "expired session", err, store.ErrNotFound)
	readSession(ctx, t, s, kept.Hash)
	_, err = s.Code(ctx, goneCode.Hash)
	wantErr(t, "expired code", err, store.ErrNotFound)
	readCode(ctx, t, s, keptCode.Hash)
	_, err = s.Consent(ctx, "gone", "app")
	wantErr(t, "expired consent", err, store.ErrNotFound)
	readConsent(ctx, t, s, "kept", "app")
	readConsent(ctx, t, s, "forever", "app")

	n, err = s.DeleteExpiredBrowser(ctx, now)
	wantErr(t, "DeleteExpiredBrowser again", err, nil)
	equal(t, "records removed the second time", n, int64(0))
}
