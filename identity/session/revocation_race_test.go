package session_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store/postgres"
	"github.com/gatehouse/gatehouse/identity/store/postgres/pgtest"
)

// rclock is a settable clock.
type rclock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *rclock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *rclock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// TestSessionStartedDuringRevocationEnds: a login that checked the old
// password stores its session while RevokeSubject runs, after its DELETE of
// the subject's sessions and before its commit (a row lock holds it there),
// and Start's check of the revocation, made before that commit, passes.
// Current refuses the session while the subject's revocation lasts; it
// failed when the session came back once the revocation expired (an hour
// on): RevokeSubject's second pass, after its commit, now deletes it.
func TestSessionStartedDuringRevocationEnds(t *testing.T) {
	dsn := pgtest.FreshDatabase(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, postgres.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clk := &rclock{t: time.Now().UTC()}
	m, err := session.New(session.Config{Store: st, Issuer: "https://id.example", Now: clk.Now,
		Ended: func(ctx context.Context, sub string, at time.Time) (bool, error) {
			return st.AccessTokenRevoked(ctx, "", "", sub, at)
		}})
	if err != nil {
		t.Fatal(err)
	}
	// An old revocation of alice (a row to hold a lock on).
	old := clk.Now().Add(-48 * time.Hour)
	if err := st.RevokeSubject(ctx, "alice", old, old.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := conn.Begin(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM subject_revocations WHERE subject = 'alice' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	nb := clk.Now()
	done := make(chan error, 1)
	go func() { done <- st.RevokeSubject(ctx, "alice", nb, nb.Add(time.Hour)) }() // gatehouse user passwd alice
	time.Sleep(500 * time.Millisecond)                                            // its DELETE FROM sessions has run; it waits at the INSERT
	// The login that read the old hash just before the change (at < nb) stores its session now.
	w := httptest.NewRecorder()
	_, err = m.Start(ctx, w, httptest.NewRequest("POST", "/", nil), "alice", nb.Add(-time.Second))
	if err != nil {
		t.Fatalf("Start: %v (the window did not open: the test shows nothing)", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, c := range w.Result().Cookies() {
		if c.MaxAge >= 0 {
			r.AddCookie(c)
		}
	}
	if _, ok, err := m.Current(ctx, r); ok || err != nil {
		t.Fatalf("Current right after the change: %t %v", ok, err)
	}
	clk.Add(61 * time.Minute)
	if _, err := st.DeleteExpired(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := m.Current(ctx, r); ok || err != nil {
		t.Errorf("a session whose login checked the old password is live again once the subject revocation expired (%v)", err)
	}
}
