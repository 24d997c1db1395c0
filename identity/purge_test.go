package identity

import (
	"sync"
	"testing"
	"time"
)

// metricsRecorder records the server's counts.
type metricsRecorder struct {
	mu     sync.Mutex
	purged []int64
	failed map[string]int // "endpoint error" -> count
}

func (m *metricsRecorder) TokenIssued(string, string) {}
func (m *metricsRecorder) Lockout()                   {}
func (m *metricsRecorder) RequestFailed(endpoint, code string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failed == nil {
		m.failed = map[string]int{}
	}
	m.failed[endpoint+" "+code]++
}
func (m *metricsRecorder) Purged(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.purged = append(m.purged, n)
}

func (m *metricsRecorder) purges() []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int64(nil), m.purged...)
}

// A purge pass removes the families past their absolute expiry and counts
// them; the refresh token of such a family is then unknown.
func TestPurge(t *testing.T) {
	m := &metricsRecorder{}
	f := newFixture(t, func(c *Config) { c.Metrics = m; c.PurgeInterval = -1 })
	rt := f.login("demo", "demo-pw").str("refresh_token")
	f.srv.purge(t.Context())
	if got := m.purges(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("purge of a live family: %v", got)
	}
	f.clock.Add(31 * 24 * time.Hour)
	f.srv.purge(t.Context())
	if got := m.purges(); len(got) != 2 || got[1] == 0 {
		t.Fatalf("purge after the absolute expiry: %v", got)
	}
	if n, err := f.st.DeleteExpired(t.Context(), f.clock.Now()); err != nil || n != 0 {
		t.Fatalf("the purge left %d records (%v)", n, err)
	}
	if res := f.refresh("app", rt); res.status != 400 {
		t.Fatalf("purged family still refreshes: %s", res.raw)
	}
}

// The purge runs by itself every PurgeInterval.
func TestPurgeRunsPeriodically(t *testing.T) {
	m := &metricsRecorder{}
	newFixture(t, func(c *Config) { c.Metrics = m; c.PurgeInterval = 10 * time.Millisecond })
	deadline := time.Now().Add(30 * time.Second) // a bound on the wait, not a timing check
	for len(m.purges()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no periodic purge")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A purge pass also removes the browser flows' expired sessions and codes
// (a code once its replay retention has passed).
func TestPurgeBrowser(t *testing.T) {
	m := &metricsRecorder{}
	f := newFixture(t, withBrowserClients, func(c *Config) { c.Metrics = m; c.PurgeInterval = -1 })
	b, code := loggedIn(t, f)
	bs := browserStore(f.st)
	f.srv.purge(t.Context())
	if got := m.purges(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("purge of a live session and code: %v", got)
	}
	f.clock.Add(25 * time.Hour) // past the idle timeout and the code's retention
	f.srv.purge(t.Context())
	if got := m.purges(); len(got) != 2 || got[1] != 2 {
		t.Fatalf("purge of an expired session and code: %v, want 2 records", got)
	}
	if _, err := bs.Code(t.Context(), sha(code)); err == nil {
		t.Error("the code is still stored")
	}
	if _, err := bs.Session(t.Context(), sha(b.sessionCookie().Value)); err == nil {
		t.Error("the session is still stored")
	}
}
