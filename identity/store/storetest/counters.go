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
	{"Admit", testCountersAdmit},
	{"Refund", testCountersRefund},
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

// failure is one Admit of a counter test, at t0+at, whether it must be
// refused, and the counter it must return.
type failure struct {
	key     string // the case's name when empty
	at      time.Duration
	refused bool          // the key is locked: nothing changes
	want    store.Counter // Key is filled in
}

// addFailures runs fs in order against s with the given policy, checking
// each admission, returned counter and stored counter.
func addFailures(ctx context.Context, t *testing.T, s store.Store, defaultKey string, window time.Duration, limit int, lockout time.Duration, fs []failure) {
	t.Helper()
	for i, f := range fs {
		key := cmp.Or(f.key, defaultKey)
		now := after(f.at)
		want := normCounter(t, f.want)
		want.Key = key
		got, admitted, err := s.Admit(ctx, key, now, window, limit, lockout)
		what := fmt.Sprintf("Admit %d (%q at t0+%v)", i, key, f.at)
		wantErr(t, what, err, nil)
		equal(t, "admitted by "+what, admitted, !f.refused)
		equal(t, "counter returned by "+what, normCounter(t, got), want)
		equal(t, "Counter after "+what, readCounter(ctx, t, s, key), want)
	}
}

// testCountersAdmit: windows, limits and locks, one subtest per sequence
// of attempts on a key of its own.
func testCountersAdmit(t *testing.T, s store.Store) {
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
			// A key is bytes: the password checker's pair keys hold a NUL
			// between the user and the source, and a user name from a
			// form may hold any byte; keys that differ after a NUL are
			// other keys.
			name: "KeysOfAnyBytes",
			failures: []failure{
				{key: "pair:demo\x00127.0.0.1", at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
				{key: "pair:demo\x00127.0.0.2", at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
				{key: "pair:demo\x00127.0.0.1", at: time.Minute, want: store.Counter{Count: 2, WindowStart: t0}},
				{key: "user:\xff\xfe", at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
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
			// Attempts while the lock is in force (up to its last
			// millisecond) are refused and change nothing.
			name: "RefusedWhileLocked",
			failures: []failure{
				{at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
				{at: 0, want: store.Counter{Count: 2, WindowStart: t0}},
				{at: time.Minute, want: store.Counter{Count: 3, WindowStart: t0, LockedUntil: after(6 * time.Minute)}},
				{at: 2 * time.Minute, refused: true, want: store.Counter{Count: 3, WindowStart: t0, LockedUntil: after(6 * time.Minute)}},
				{at: 6*time.Minute - time.Millisecond, refused: true, want: store.Counter{Count: 3, WindowStart: t0, LockedUntil: after(6 * time.Minute)}},
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
			// A lock longer than the window outlives it: attempts are
			// refused until it ends, and the next one starts a new window
			// (the old, past LockedUntil stays).
			name:    "LockOutlivesWindow",
			lockout: time.Hour,
			failures: []failure{
				{at: 0, want: store.Counter{Count: 1, WindowStart: t0}},
				{at: 0, want: store.Counter{Count: 2, WindowStart: t0}},
				{at: 0, want: store.Counter{Count: 3, WindowStart: t0, LockedUntil: after(time.Hour)}},
				{at: 20 * time.Minute, refused: true, want: store.Counter{Count: 3, WindowStart: t0, LockedUntil: after(time.Hour)}},
				{at: time.Hour, want: store.Counter{Count: 1, WindowStart: after(time.Hour), LockedUntil: after(time.Hour)}},
				{at: time.Hour + time.Minute, want: store.Counter{Count: 2, WindowStart: after(time.Hour), LockedUntil: after(time.Hour)}},
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

// testCountersRefund: a refund takes back one admitted attempt in its own
// window, and ends the lock it set or that no longer has its count.
func testCountersRefund(t *testing.T, s store.Store) {
	ctx := Context(t)
	admit := func(key string, at time.Duration) store.Counter {
		t.Helper()
		c, ok, err := s.Admit(ctx, key, after(at), failWindow, failLimit, failLockout)
		wantErr(t, "Admit "+key, err, nil)
		equal(t, "admitted "+key, ok, true)
		return c
	}
	refund := func(key string, c store.Counter) {
		t.Helper()
		wantErr(t, "Refund "+key, s.Refund(ctx, key, c, failLimit), nil)
	}

	admit("in-window", 0)
	second := admit("in-window", time.Second)
	refund("in-window", second)
	equal(t, "Counter after a refund", readCounter(ctx, t, s, "in-window"), store.Counter{Key: "in-window", Count: 1, WindowStart: t0})

	admit("own-lock", 0)
	admit("own-lock", 0)
	third := admit("own-lock", time.Second)
	equal(t, "locked by the third attempt", third.Locked(after(time.Second)), true)
	refund("own-lock", third)
	equal(t, "Counter after refunding the attempt that locked", readCounter(ctx, t, s, "own-lock"),
		store.Counter{Key: "own-lock", Count: 2, WindowStart: t0})

	// A refund of an attempt from a window that has ended changes nothing.
	old := admit("new-window", 0)
	admit("new-window", failWindow)
	refund("new-window", old)
	equal(t, "Counter after refunding an old window's attempt", readCounter(ctx, t, s, "new-window"),
		store.Counter{Key: "new-window", Count: 1, WindowStart: after(failWindow)})

	// A relock in the same window (count past the limit) is lifted by
	// refunding the attempt that set it.
	admit("relock", 0)
	admit("relock", 0)
	admit("relock", 0)
	relock := admit("relock", failLockout)
	equal(t, "relocked", relock.Locked(after(failLockout)), true)
	refund("relock", relock)
	equal(t, "Counter after refunding the relock", readCounter(ctx, t, s, "relock"),
		store.Counter{Key: "relock", Count: 3, WindowStart: t0})

	refund("missing", store.Counter{Key: "missing", Count: 1, WindowStart: t0})
	equal(t, "Counter after refunding a missing key", readCounter(ctx, t, s, "missing"), store.Counter{Key: "missing"})
}

func testCountersMissing(t *testing.T, s store.Store) {
	ctx := Context(t)
	equal(t, "Counter of an empty store", readCounter(ctx, t, s, "user:alice"), store.Counter{Key: "user:alice"})
	_, _, err := s.Admit(ctx, "user:bob", t0, failWindow, failLimit, failLockout)
	wantErr(t, "Admit", err, nil)
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

// Admitters is how many goroutines AdmitConcurrently starts.
const Admitters = 50

// AdmitConcurrently has Admitters goroutines each ask admission for one
// attempt against the same key at once (goroutine i at t0+i ms), spread
// over stores (several Stores sharing one database, as several processes
// would). None may fail, exactly the limit are admitted, with the counts 1
// to limit each once, and the rest refused: parallel attempts get no more
// than sequential ones. The window is the one the first count began; the
// admission that reached the limit set the lock; every store reads the
// final count. The stores must share an empty database.
func AdmitConcurrently(t *testing.T, stores ...store.Store) {
	if len(stores) == 0 {
		t.Fatal("AdmitConcurrently: no store")
	}
	ctx := Context(t)
	const key, window, limit = "user:alice", time.Hour, 10
	got := make([]store.Counter, Admitters)
	admitted := make([]bool, Admitters)
	errs := concurrently(ctx, t, Admitters, func(i int) error {
		var err error
		got[i], admitted[i], err = stores[i%len(stores)].Admit(ctx, key, after(time.Duration(i)*time.Millisecond),
			window, limit, failLockout)
		return err
	})
	for i, err := range errs {
		wantErr(t, fmt.Sprintf("Admit in goroutine %d", i), err, nil)
	}

	// byCount[n] is the admitted goroutine that got count n.
	byCount := make([]int, limit+1)
	for i := range byCount {
		byCount[i] = -1
	}
	n := 0
	for i, c := range got {
		if !admitted[i] {
			continue
		}
		n++
		if c.Count < 1 || c.Count > limit {
			t.Fatalf("goroutine %d was admitted with count %d, want 1 to %d", i, c.Count, limit)
		}
		if j := byCount[c.Count]; j >= 0 {
			t.Fatalf("goroutines %d and %d both got count %d: an increment was lost", j, i, c.Count)
		}
		byCount[c.Count] = i
	}
	equal(t, "admitted attempts", n, limit)
	windowStart := after(time.Duration(byCount[1]) * time.Millisecond)
	lockedUntil := after(time.Duration(byCount[limit])*time.Millisecond + failLockout)
	final := store.Counter{Key: key, Count: limit, WindowStart: windowStart, LockedUntil: lockedUntil}
	for i, c := range got {
		want := store.Counter{Key: key, Count: c.Count, WindowStart: windowStart}
		switch {
		case !admitted[i]:
			want = final
		case c.Count >= limit:
			want.LockedUntil = lockedUntil
		}
		equal(t, fmt.Sprintf("counter returned to goroutine %d", i), normCounter(t, c), want)
	}
	for i, s := range stores {
		equal(t, fmt.Sprintf("Counter from store %d", i), readCounter(ctx, t, s, key), final)
	}
}
