package identity

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// flakyStore is a store whose database the test takes away: while down,
// the calls the token endpoint makes fail with store.ErrUnavailable, as
// the PostgreSQL store's do; loseNextRotation makes the next rotation
// commit and then fail so (its answer lost with the connection, which
// starts an outage). It records its outages on the test clock, as the
// PostgreSQL store does on the system clock.
type flakyStore struct {
	store.Store
	clock *clock

	mu       sync.Mutex
	down     bool
	since    time.Time
	past     [][2]time.Time
	loseNext bool
}

var errDown = fmt.Errorf("test: %w", store.ErrUnavailable)

// setDown takes the database away (true) or brings it back.
func (s *flakyStore) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setDownLocked(down)
}

func (s *flakyStore) setDownLocked(down bool) {
	switch {
	case down && !s.down:
		s.since = s.clock.Now()
	case !down && s.down:
		s.past = append(s.past, [2]time.Time{s.since, s.clock.Now()})
	}
	s.down = down
}

func (s *flakyStore) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

func (s *flakyStore) loseNextRotation() {
	s.mu.Lock()
	s.loseNext = true
	s.mu.Unlock()
}

func (s *flakyStore) RefreshFamily(ctx context.Context, id string) (store.RefreshFamily, error) {
	if s.isDown() {
		return store.RefreshFamily{}, errDown
	}
	return s.Store.RefreshFamily(ctx, id)
}

func (s *flakyStore) RefreshState(ctx context.Context, id string) (store.RefreshState, error) {
	if s.isDown() {
		return store.RefreshState{}, errDown
	}
	return s.Store.RefreshState(ctx, id)
}

func (s *flakyStore) RotateRefreshFamily(ctx context.Context, id string, from int, next []byte, nextExpiresAt, now time.Time) error {
	if s.isDown() {
		return errDown
	}
	if err := s.Store.RotateRefreshFamily(ctx, id, from, next, nextExpiresAt, now); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loseNext {
		s.loseNext = false
		s.setDownLocked(true)
		return errDown
	}
	return nil
}

func (s *flakyStore) UserBySubject(ctx context.Context, subject string) (store.User, error) {
	if s.isDown() {
		return store.User{}, errDown
	}
	return s.Store.UserBySubject(ctx, subject)
}

func (s *flakyStore) Admit(ctx context.Context, key string, now time.Time, window time.Duration, limit int, lockout time.Duration) (store.Counter, bool, error) {
	if s.isDown() {
		return store.Counter{}, false, errDown
	}
	return s.Store.Admit(ctx, key, now, window, limit, lockout)
}

// recordingOutages is a flakyStore that tells its outages
// (store.Outages), as the PostgreSQL store does.
type recordingOutages struct{ *flakyStore }

func (s recordingOutages) Unavailable(from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	spans := s.past
	if s.down {
		spans = append(spans, [2]time.Time{s.since, s.clock.Now()})
	}
	var total time.Duration
	for _, sp := range spans {
		a, b := sp[0], sp[1]
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		if b.After(a) {
			total += b.Sub(a)
		}
	}
	return total
}

// newFlakyFixture is a fixture whose server runs on a flakyStore over the
// fixture's SQLite store, telling its outages when outages is set.
func newFlakyFixture(t *testing.T, outages bool) (*fixture, *flakyStore) {
	t.Helper()
	f := newFixture(t)
	flaky := &flakyStore{Store: f.st, clock: f.clock}
	var st store.Store = flaky
	if outages {
		st = recordingOutages{flaky}
	}
	f.serveOn(st)
	return f, flaky
}

// TestStoreUnavailable: while the store cannot reach its database the
// token endpoint answers 503 temporarily_unavailable (not 500
// server_error) to what needs it (refresh, password), and
// client_credentials, which needs no store, goes on; once it is back the
// same refresh token works, nothing having changed meanwhile.
func TestStoreUnavailable(t *testing.T) {
	f, flaky := newFlakyFixture(t, true)
	rt := f.login("demo", "demo-pw").str("refresh_token")
	flaky.setDown(true)
	for name, res := range map[string]response{
		"refresh":  f.refresh("app", rt),
		"password": f.login("demo", "demo-pw"),
	} {
		if res.status != 503 || res.str("error") != "temporarily_unavailable" {
			t.Errorf("%s while the store is down: %d %s, want 503 temporarily_unavailable", name, res.status, res.raw)
		}
	}
	if res := f.post(form("grant_type", "client_credentials"), basic("svc", "svc-secret")); res.status != 200 {
		t.Errorf("client_credentials while the store is down: %d %s", res.status, res.raw)
	}
	flaky.setDown(false)
	res := f.refresh("app", rt)
	if res.status != 200 {
		t.Fatalf("refresh after the store came back: %d %s", res.status, res.raw)
	}
	if next := f.refresh("app", res.str("refresh_token")); next.status != 200 {
		t.Fatalf("the successor: %d %s", next.status, next.raw)
	}
}

// TestRefreshRetriedAfterOutage: a rotation commits, then its answer is
// lost as the database goes away (the client is told 503); the outage
// lasts a minute, twelve times the grace window. Sent again once the
// database is back, the same refresh token gets the successor it would
// have had, and the chain goes on: the outage did not use up the grace
// window. Without the store's record of outages (a backend that keeps
// none), the same retry is a replay and revokes the family. And the grace
// window still closes: a retry the window's length after the outage
// ended is a replay.
func TestRefreshRetriedAfterOutage(t *testing.T) {
	for _, tt := range []struct {
		name       string
		outages    bool
		afterBack  time.Duration // from the end of the outage to the retry
		wantStatus int
	}{
		{"outage recorded", true, time.Second, 200},
		{"no record of the outage", false, time.Second, 400},
		{"retry after the window", true, 6 * time.Second, 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, flaky := newFlakyFixture(t, tt.outages)
			rt := f.login("demo", "demo-pw").str("refresh_token")
			flaky.loseNextRotation()
			if res := f.refresh("app", rt); res.status != 503 {
				t.Fatalf("the refresh whose answer was lost: %d %s, want 503", res.status, res.raw)
			}
			f.clock.Add(time.Minute)
			if res := f.refresh("app", rt); res.status != 503 {
				t.Fatalf("a retry during the outage: %d %s, want 503", res.status, res.raw)
			}
			flaky.setDown(false)
			f.clock.Add(tt.afterBack)
			retry := f.refresh("app", rt)
			if retry.status != tt.wantStatus {
				t.Fatalf("the retry after the outage: %d %s, want %d", retry.status, retry.raw, tt.wantStatus)
			}
			if tt.wantStatus != 200 {
				if retry.str("error") != "invalid_grant" {
					t.Fatalf("the retry: %s", retry.raw)
				}
				rev, err := f.st.Revocations(t.Context(), f.clock.Now())
				if err != nil || len(rev) != 1 || rev[0].FamilyID == "" {
					t.Fatalf("revocations after a replay: %v, %v; want the family's", rev, err)
				}
				return
			}
			// One successor per generation: the committed one, which the
			// chain goes on from.
			fam, err := f.st.RefreshFamily(t.Context(), familyOf(t, rt))
			if err != nil || fam.Generation != 2 || string(fam.Current) != string(sha(retry.str("refresh_token"))) {
				t.Fatalf("the family after the retry: generation %d, %v; want generation 2 with the retry's token current", fam.Generation, err)
			}
			next := f.refresh("app", retry.str("refresh_token"))
			if next.status != 200 {
				t.Fatalf("the successor: %d %s", next.status, next.raw)
			}
			if rev, err := f.st.Revocations(t.Context(), f.clock.Now()); err != nil || len(rev) != 0 {
				t.Fatalf("revocations: %v, %v; want none", rev, err)
			}
		})
	}
}

// familyOf is the family id a refresh token names.
func familyOf(t *testing.T, token string) string {
	t.Helper()
	for i := range len(token) {
		if token[i] == '~' {
			return token[:i]
		}
	}
	t.Fatalf("refresh token without a family")
	return ""
}
