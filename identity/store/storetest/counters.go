package storetest

import (
	"cmp"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var counterCases = []testCase{
	{"AddFailure", testCountersAddFailure},
	{"Missing", testCountersMissing},
	{"Reset", testCountersReset},
}

// The throttling policy of the counter tests, unless a case sets its own.
const (
	failWindow  = 10 * time.Minute
	failLimit   = 3
	failLockout = 5 * time.Minute
)

// after is the time d after t0.
func after(d time.Duration) time.Time { return t0.Add(d) }

// failure is one AddFailure of a counter test, at t0+at, and the counter
// it must return.
type failure struct {
	key  string // the case's name when empty
	at   time.Duration
	want store.Counter // Key is filled in
}

// addFailures runs fs in order against s with the given policy, checking
// each returned counter and the stored one.
func addFailures(ctx context.Context, t *testing.T, s store.Store, defaultKey string, window time.Duration, limit int, lockout time.Duration, fs []failure) {
	t.Helper()
	for i, f := range fs {
		key := cmp.Or(f.key, defaultKey)
		now := after(f.at)
		want := normCounter(t, f.want)
		want.Key = key
		got, err := s.AddFailure(ctx, key, now, window, limit, lockout)
		wantErr(t, fmt.Sprintf("AddFailure %d (%q at t0+%v)", i, key, f.at), err, nil)
		equal(t, fmt.Sprintf("counter returned by AddFailure %d (%q at t0+%v)", i, key, f.at), normCounter(t, got), want)
		equal(t, fmt.Sprintf("Counter after AddFailure %d (%q at t0+%v)", i, key, f.at), readCounter(ctx, t, s, key), want)
	}
}

// testCountersAddFailure: windows, limits and locks, one subtest per
// sequence of failures on a key of its own.
func testCountersAddFailure(t *testing.T, s store.Store) {
	for _, tt := range []struct {
		name     string
		lockout  time.Duration // failLockout when zero
		limit    int           // failLimit when zero
		failures []failure
	}{
		{
			name: "CountsWithinWindow",
			failures: []failure{
				{at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
				{at: time.Minute, want: store.Counter{Count: 2, WindowStart: t0}},
			},
		},
		{
			// A window that began window before now has run out; one
			// millisecond earlier it has not.
			name: "WindowResetsAtBoundary",
			failures: []failure{
				{at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
				{at: failWindow - time.Millisecond, want: store.Counter{Count: 2, WindowStart: t0}},
				{at: failWindow, want: store.Counter{Count: 1, WindowStart: after(failWindow)}},
				{at: failWindow + time.Millisecond, want: store.Counter{Count: 2, WindowStart: after(failWindow)}},
			},
		},
		{
			name: "LocksAtLimit",
			failures: []failure{
				{at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
				{at: time.Minute, want: store.Counter{Count: 2, WindowStart: t0}},
				{at: 2 * time.Minute, want: store.Counter{Count: 3, WindowStart: t0, LockedUntil: after(7 * time.Minute)}},
			},
		},
		{
			name:  "LimitOne",
			limit: 1,
			failures: []failure{
				{at: 0, want: store.Counter{Count: 1, WindowStart: t0, LockedUntil: after(failLockout)}},
			},
		},
		{
			// Failures while the lock is in force (up to its last
			// millisecond) count, but do not move its end.
			name: "LockNotExtended",
			failures: []failure{
				{at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
				{at: 0, want: store.Counter{Count: 2, WindowStart: t0}},
				{at: time.Minute, want: store.Counter{Count: 3, WindowStart: t0, LockedUntil: after(6 * time.Minute)}},
				{at: 2 * time.Minute, want: store.Counter{Count: 4, WindowStart: t0, LockedUntil: after(6 * time.Minute)}},
				{at: 6*time.Minute - time.Millisecond, want: store.Counter{Count: 5, WindowStart: t0, LockedUntil: after(6 * time.Minute)}},
			},
		},
		{
			// Once the lock has ended (at its end, as "exp"), the next
			// failure in the same window is still past the limit and
			// locks again.
			name: "RelockInSameWindow",
			failures: []failure{
				{at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
				{at: 0, want: store.Counter{Count: 2, WindowStart: t0}},
				{at: time.Minute, want: store.Counter{Count: 3, WindowStart: t0, LockedUntil: after(6 * time.Minute)}},
				{at: 6 * time.Minute, want: store.Counter{Count: 4, WindowStart: t0, LockedUntil: after(11 * time.Minute)}},
			},
		},
		{
			// After the lock ended, a new window starts without a lock
			// (the old, past LockedUntil stays); reaching the limit in it
			// locks anew.
			name: "NewLockInNewWindow",
			failures: []failure{
				{at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
				{at: 0, want: store.Counter{Count: 2, WindowStart: t0}},
				{at: time.Minute, want: store.Counter{Count: 3, WindowStart: t0, LockedUntil: after(6 * time.Minute)}},
				{at: 12 * time.Minute, want: store.Counter{Count: 1, WindowStart: after(12 * time.Minute), LockedUntil: after(6 * time.Minute)}},
				{at: 13 * time.Minute, want: store.Counter{Count: 2, WindowStart: after(12 * time.Minute), LockedUntil: after(6 * time.Minute)}},
				{at: 14 * time.Minute, want: store.Counter{Count: 3, WindowStart: after(12 * time.Minute), LockedUntil: after(19 * time.Minute)}},
			},
		},
		{
			// A lock longer than the window outlives it: the new window's
			// failures count without extending it.
			name:    "LockOutlivesWindow",
			lockout: time.Hour,
			failures: []failure{
				{at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
				{at: 0, want: store.Counter{Count: 2, WindowStart: t0}},
				{at: 0, want: store.Counter{Count: 3, WindowStart: t0, LockedUntil: after(time.Hour)}},
				{at: 20 * time.Minute, want: store.Counter{Count: 1, WindowStart: after(20 * time.Minute), LockedUntil: after(time.Hour)}},
				{at: 21 * time.Minute, want: store.Counter{Count: 2, WindowStart: after(20 * time.Minute), LockedUntil: after(time.Hour)}},
				{at: 22 * time.Minute, want: store.Counter{Count: 3, WindowStart: after(20 * time.Minute), LockedUntil: after(time.Hour)}},
			},
		},
		{
			// Keys are independent, and case-sensitive.
			name: "KeysIndependent",
			failures: []failure{
				{key: "user:alice", at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
				{key: "ip:192.0.2.1", at: time.Minute, want: store.Counter{Count: 1, WindowStart: after(time.Minute)}},
				{key: "user:alice", at: 2 * time.Minute, want: store.Counter{Count: 2, WindowStart: t0}},
				{key: "user:Alice", at: 3 * time.Minute, want: store.Counter{Count: 1, WindowStart: after(3 * time.Minute)}},
				{key: "user:alice", at: 4 * time.Minute, want: store.Counter{Count: 3, WindowStart: t0, LockedUntil: after(9 * time.Minute)}},
				{key: "ip:192.0.2.1", at: 5 * time.Minute, want: store.Counter{Count: 2, WindowStart: after(time.Minute)}},
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addFailures(Context(t), t, s, tt.name, failWindow, cmp.Or(tt.limit, failLimit),
				cmp.Or(tt.lockout, failLockout), tt.failures)
		})
	}
}

func testCountersMissing(t *testing.T, s store.Store) {
	ctx := Context(t)
	equal(t, "Counter of an empty store", readCounter(ctx, t, s, "user:alice"), store.Counter{Key: "user:alice"})
	_, err := s.AddFailure(ctx, "user:bob", t0, failWindow, failLimit, failLockout)
	wantErr(t, "AddFailure", err, nil)
	equal(t, "Counter of a missing key", readCounter(ctx, t, s, "user:alice"), store.Counter{Key: "user:alice"})
}

// testCountersReset: a reset removes the count and the lock of one key; the
// next failure starts afresh. Resetting a missing counter is not an error.
func testCountersReset(t *testing.T, s store.Store) {
	ctx := Context(t)
	wantErr(t, "ResetCounter of a missing key", s.ResetCounter(ctx, "nobody"), nil)
	addFailures(ctx, t, s, "user:alice", failWindow, failLimit, failLockout, []failure{
		{at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
		{at: 0, want: store.Counter{Count: 2, WindowStart: t0}},
		{at: 0, want: store.Counter{Count: 3, WindowStart: t0, LockedUntil: after(failLockout)}},
		{key: "user:bob", at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
	})
	wantErr(t, "ResetCounter", s.ResetCounter(ctx, "user:alice"), nil)
	equal(t, "Counter after ResetCounter", readCounter(ctx, t, s, "user:alice"), store.Counter{Key: "user:alice"})
	equal(t, "Counter of another key after ResetCounter", readCounter(ctx, t, s, "user:bob"),
		store.Counter{Key: "user:bob", Count: 1, WindowStart: t0})
	wantErr(t, "ResetCounter again", s.ResetCounter(ctx, "user:alice"), nil)
	addFailures(ctx, t, s, "user:alice", failWindow, failLimit, failLockout, []failure{
		{at: time.Minute, want: store.Counter{Count: 1, WindowStart: after(time.Minute)}},
	})
}

// readCounter reads the counter of key, normalised.
func readCounter(ctx context.Context, t *testing.T, s store.Store, key string) store.Counter {
	t.Helper()
	c, err := s.Counter(ctx, key)
	wantErr(t, "Counter "+key, err, nil)
	return normCounter(t, c)
}

func normCounter(t *testing.T, c store.Counter) store.Counter {
	t.Helper()
	c.WindowStart = utc(t, "counter WindowStart", c.WindowStart)
	c.LockedUntil = utc(t, "counter LockedUntil", c.LockedUntil)
	return c
}

// AddFailureAdders is how many goroutines AddFailuresConcurrently starts.
const AddFailureAdders = 50

// AddFailuresConcurrently has AddFailureAdders goroutines each count one
// failure against the same key at once (goroutine i at t0+i ms), spread over
// stores (several Stores sharing one database, as several processes would).
// None may fail and no increment may be lost: the counts returned are 1 to
// AddFailureAdders, each once; the window is the one the first count began;
// the call that reached the limit set the lock and the later ones kept it;
// and every store reads the final count. The stores must share an empty
// database.
func AddFailuresConcurrently(t *testing.T, stores ...store.Store) {
	if len(stores) == 0 {
		t.Fatal("AddFailuresConcurrently: no store")
	}
	ctx := Context(t)
	const key, window, limit = "user:alice", time.Hour, 10
	got := make([]store.Counter, AddFailureAdders)
	errs := concurrently(ctx, t, AddFailureAdders, func(i int) error {
		var err error
		got[i], err = stores[i%len(stores)].AddFailure(ctx, key, after(time.Duration(i)*time.Millisecond),
			window, limit, failLockout)
		return err
	})
	for i, err := range errs {
		wantErr(t, fmt.Sprintf("AddFailure in goroutine %d", i), err, nil)
	}

	// byCount[n] is the goroutine that got count n.
	byCount := make([]int, AddFailureAdders+1)
	for i := range byCount {
		byCount[i] = -1
	}
	for i, c := range got {
		if c.Count < 1 || c.Count > AddFailureAdders {
			t.Fatalf("goroutine %d got count %d, want 1 to %d", i, c.Count, AddFailureAdders)
		}
		if j := byCount[c.Count]; j >= 0 {
			t.Fatalf("goroutines %d and %d both got count %d: an increment was lost", j, i, c.Count)
		}
		byCount[c.Count] = i
	}
	windowStart := after(time.Duration(byCount[1]) * time.Millisecond)
	lockedUntil := after(time.Duration(byCount[limit])*time.Millisecond + failLockout)
	for i, c := range got {
		want := store.Counter{Key: key, Count: c.Count, WindowStart: windowStart}
		if c.Count >= limit {
			want.LockedUntil = lockedUntil
		}
		equal(t, fmt.Sprintf("counter returned to goroutine %d", i), normCounter(t, c), want)
	}
	for i, s := range stores {
		equal(t, fmt.Sprintf("Counter from store %d", i), readCounter(ctx, t, s, key), store.Counter{
			Key: key, Count: AddFailureAdders, WindowStart: windowStart, LockedUntil: lockedUntil,
		})
	}
}
