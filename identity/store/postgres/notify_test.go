package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/postgres"
	"github.com/gatehouse/gatehouse/identity/store/postgres/pgtest"
	"github.com/gatehouse/gatehouse/identity/store/storetest"
)

// noticeTimeout bounds the wait for a notice that should come; quiet is
// how long one that should not come is waited for.
const (
	noticeTimeout = 10 * time.Second
	quiet         = 500 * time.Millisecond
)

// openWith opens a store with cfg (its DSN set to dsn) and closes it when
// t ends.
func openWith(t *testing.T, dsn string, cfg postgres.Config) *postgres.Store {
	t.Helper()
	cfg.DSN = dsn
	s, err := postgres.Open(storetest.Context(t), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// notice waits for a value on ch, failing t after noticeTimeout.
func notice(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the notice channel closed", what)
		}
	case <-time.After(noticeTimeout):
		t.Fatalf("%s: no notice within %v", what, noticeTimeout)
	}
}

// silent fails t if ch receives within quiet.
func silent(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s: a notice, want none", what)
	case <-time.After(quiet):
	}
}

// seedFamily stores a family of subject sub with id.
func seedFamily(t *testing.T, s store.Store, id, sub string) {
	t.Helper()
	now := time.Now()
	err := s.CreateRefreshFamily(storetest.Context(t), store.RefreshFamily{
		ID: id, ClientID: "c", Subject: sub, Created: now, ExpiresAt: now.Add(time.Hour),
		Salt: []byte("salt"), Generation: 1, Current: []byte("h1"), CurrentExpiresAt: now.Add(time.Hour),
	}, store.FamilyBound{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRevocationNotices: a revocation of each kind committed by one store
// reaches a subscriber of another store on the same database (two
// instances), and of the same store; a write that revokes nothing (a
// rotation) sends none.
func TestRevocationNotices(t *testing.T) {
	dsn := pgtest.FreshDatabase(t)
	a, b := openWith(t, dsn, postgres.Config{}), openWith(t, dsn, postgres.Config{})
	ctx := storetest.Context(t)
	onB, onA := b.RevocationNotices(ctx), a.RevocationNotices(ctx)
	notice(t, onB, "B's listener connecting")
	notice(t, onA, "A's listener connecting")
	seedFamily(t, a, "fam-1", "sub-1")
	now := time.Now()
	for _, c := range []struct {
		name   string
		revoke func() error
	}{
		{"access token", func() error { return a.RevokeAccessToken(ctx, "jti-1", now.Add(time.Hour), now) }},
		{"refresh family", func() error { return a.RevokeRefreshFamily(ctx, "fam-1", now, now.Add(time.Hour)) }},
		{"subject", func() error { return a.RevokeSubject(ctx, "sub-1", now, now.Add(time.Hour)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			silent(t, onB, "before the revocation")
			if err := c.revoke(); err != nil {
				t.Fatal(err)
			}
			notice(t, onB, "B, after a revocation on A")
			notice(t, onA, "A, after its own revocation")
		})
	}
	seedFamily(t, a, "fam-2", "sub-2")
	if err := a.RotateRefreshFamily(ctx, "fam-2", 1, []byte("h2"), now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	silent(t, onB, "after a rotation")
}

// TestRevocationNoticesOff: with DisableNotify a store neither listens
// (RevocationNotices is nil) nor notifies (a listening store on the same
// database hears nothing of its revocations): the CockroachDB mode, where
// verifiers poll.
func TestRevocationNoticesOff(t *testing.T) {
	dsn := pgtest.FreshDatabase(t)
	off, on := openWith(t, dsn, postgres.Config{DisableNotify: true}), openWith(t, dsn, postgres.Config{})
	ctx := storetest.Context(t)
	if ch := off.RevocationNotices(ctx); ch != nil {
		t.Fatal("RevocationNotices with DisableNotify: a channel, want nil")
	}
	heard := on.RevocationNotices(ctx)
	notice(t, heard, "the listener connecting")
	seedFamily(t, off, "fam-1", "sub-1")
	now := time.Now()
	if err := off.RevokeAccessToken(ctx, "jti-1", now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	if err := off.RevokeRefreshFamily(ctx, "fam-1", now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := off.RevokeSubject(ctx, "sub-1", now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	silent(t, heard, "revocations by a store with DisableNotify")
	if revs, err := on.Revocations(ctx, now); err != nil || len(revs) != 3 {
		t.Fatalf("Revocations: %d, %v; want the 3 written", len(revs), err)
	}
}

// TestRevocationNoticesClose: a subscriber's channel closes when its
// context ends, and every one when the store closes; a subscription after
// Close gets a closed channel.
func TestRevocationNoticesClose(t *testing.T) {
	s, err := postgres.Open(storetest.Context(t), postgres.Config{DSN: pgtest.FreshDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(storetest.Context(t))
	first, second := s.RevocationNotices(ctx), s.RevocationNotices(storetest.Context(t))
	cancel()
	closed := func(ch <-chan struct{}, what string) {
		t.Helper()
		deadline := time.After(noticeTimeout)
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					return
				}
			case <-deadline:
				t.Fatalf("%s: the channel is still open", what)
			}
		}
	}
	closed(first, "after its context ended")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed(second, "after Close")
	closed(s.RevocationNotices(storetest.Context(t)), "subscribed after Close")
}

// TestUnreachable: through a proxy that cuts every connection, the store's
// operations fail with store.ErrUnavailable (not a bare driver error), the
// outage is recorded (store.Outages) from the first failure to the first
// success, and when the server is reachable again everything works
// without reopening: statements, and the listener, which reconnects and
// sends a notice (those sent meanwhile were lost) and then notices again.
func TestUnreachable(t *testing.T) {
	dsn := pgtest.FreshDatabase(t)
	proxy, via := pgtest.NewProxy(t, dsn)
	s := openWith(t, via, postgres.Config{})
	other := openWith(t, dsn, postgres.Config{})
	ctx := storetest.Context(t)
	notices := s.RevocationNotices(ctx)
	notice(t, notices, "the listener connecting")
	seedFamily(t, s, "fam-1", "sub-1")

	began := time.Now()
	proxy.Cut()
	calls := map[string]func() error{
		"RefreshFamily": func() error { _, err := s.RefreshFamily(ctx, "fam-1"); return err },
		"RotateRefreshFamily": func() error {
			return s.RotateRefreshFamily(ctx, "fam-1", 1, []byte("h2"), time.Now().Add(time.Hour), time.Now())
		},
		"RevokeSubject": func() error { return s.RevokeSubject(ctx, "sub-9", time.Now(), time.Now().Add(time.Hour)) },
		"Revocations":   func() error { _, err := s.Revocations(ctx, time.Now()); return err },
		"Admit": func() error {
			_, _, err := s.Admit(ctx, "k", time.Now(), time.Minute, 5, time.Minute)
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with the server cut off: %v, want store.ErrUnavailable", name, err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if d := s.Unavailable(began, time.Now()); d <= 0 {
		t.Errorf("Unavailable during the outage: %v, want more than 0", d)
	}
	if d := other.Unavailable(began, time.Now()); d != 0 {
		t.Errorf("Unavailable of a store that was never cut off: %v, want 0", d)
	}

	proxy.Restore()
	deadline := time.Now().Add(noticeTimeout)
	for {
		_, err := s.RefreshFamily(ctx, "fam-1")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("RefreshFamily after the server came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	back := time.Now()
	outage := s.Unavailable(began.Add(-time.Minute), back.Add(time.Minute))
	if outage < 200*time.Millisecond || outage > back.Sub(began) {
		t.Errorf("the outage recorded: %v, want between 200ms and %v", outage, back.Sub(began))
	}
	if d := s.Unavailable(back, back.Add(time.Hour)); d != 0 {
		t.Errorf("Unavailable after the outage ended: %v, want 0", d)
	}
	notice(t, notices, "the listener connecting again")
	if err := other.RevokeAccessToken(ctx, "jti-1", time.Now().Add(time.Hour), time.Now()); err != nil {
		t.Fatal(err)
	}
	notice(t, notices, "a revocation after the listener reconnected")
}
