package storetest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// Timeout bounds each test of the suite: every store call and every wait
// for goroutines runs under a context that ends after it.
const Timeout = 2 * time.Minute

// Run runs the whole conformance suite. open returns a new, empty store for
// the test t, and arranges (with t.Cleanup) for it to be closed; it is called
// once by each subtest.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					c.run(t, open(t))
				})
			}
		})
	}
}

// A testCase is one subtest; it gets a fresh store.
type testCase struct {
	name string
	run  func(t *testing.T, s store.Store)
}

// groups are the subtests by the part of the interface they test.
var groups = []struct {
	name  string
	cases []testCase
}{
	{"Secret", secretCases},
	{"SigningKeys", signingKeyCases},
	{"Audit", auditCases},
	{"AuditChanges", auditChangeCases},
	{"Users", userCases},
	{"MFA", mfaCases},
	{"Passkeys", passkeyCases},
	{"RefreshFamilies", refreshCases},
	{"KeepFamilies", keepCases},
	{"LegacyFamilies", legacyCases},
	{"Revocations", revocationCases},
	{"Entitlements", entitlementCases},
	{"Counters", counterCases},
	{"DeleteExpired", deleteExpiredCases},
	{"Times", timeCases},
	{"Concurrency", concurrencyCases},
}

// t0 is the time the suite's records are created at. Times the suite
// compares exactly are whole milliseconds, in UTC.
var t0 = time.Date(2031, time.March, 4, 5, 6, 7, 890_000_000, time.UTC)

// Context is a context for the test t that ends after Timeout, or when t
// ends.
func Context(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

// hash is the SHA-256 of s, as refresh tokens are stored.
func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// wantErr fails t unless err is target (or nil when target is nil).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	switch {
	case target == nil && err != nil:
		t.Fatalf("%s: unexpected error: %v", what, err)
	case target != nil && !errors.Is(err, target):
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
}

// equal fails t unless got and want are deeply equal.
func equal[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// utc checks that tm is the zero time or in UTC, and returns it without a
// monotonic clock reading, ready for reflect.DeepEqual.
func utc(t *testing.T, what string, tm time.Time) time.Time {
	t.Helper()
	if tm.IsZero() {
		return time.Time{}
	}
	if tm.Location() != time.UTC {
		t.Errorf("%s: %v is not in UTC", what, tm)
	}
	return tm.UTC().Round(0)
}

// list is l, with an empty list as nil: backends need not tell them apart.
func list[T any](l []T) []T {
	if len(l) == 0 {
		return nil
	}
	return l
}

func normKey(t *testing.T, k store.SigningKey) store.SigningKey {
	t.Helper()
	k.Private = list(k.Private)
	k.Created = utc(t, "key Created", k.Created)
	k.SignFrom = utc(t, "key SignFrom", k.SignFrom)
	k.RetireAt = utc(t, "key RetireAt", k.RetireAt)
	k.RemoveAt = utc(t, "key RemoveAt", k.RemoveAt)
	return k
}

func normUser(t *testing.T, u store.User) store.User {
	t.Helper()
	u.Scopes, u.Roles = list(u.Scopes), list(u.Roles)
	u.Created = utc(t, "user Created", u.Created)
	u.Updated = utc(t, "user Updated", u.Updated)
	return u
}

func normFamily(t *testing.T, f store.RefreshFamily) store.RefreshFamily {
	t.Helper()
	f.Scopes = list(f.Scopes)
	f.AuthTime = utc(t, "family AuthTime", f.AuthTime)
	f.Created = utc(t, "family Created", f.Created)
	f.ExpiresAt = utc(t, "family ExpiresAt", f.ExpiresAt)
	f.RevokedAt = utc(t, "family RevokedAt", f.RevokedAt)
	f.Salt, f.Current, f.Previous = list(f.Salt), list(f.Current), list(f.Previous)
	f.CurrentExpiresAt = utc(t, "family CurrentExpiresAt", f.CurrentExpiresAt)
	f.RotatedAt = utc(t, "family RotatedAt", f.RotatedAt)
	return f
}

func normToken(t *testing.T, r store.RefreshToken) store.RefreshToken {
	t.Helper()
	r.Hash, r.Parent, r.Successor = list(r.Hash), list(r.Parent), list(r.Successor)
	r.IssuedAt = utc(t, "token IssuedAt", r.IssuedAt)
	r.ExpiresAt = utc(t, "token ExpiresAt", r.ExpiresAt)
	r.RotatedAt = utc(t, "token RotatedAt", r.RotatedAt)
	return r
}

// normRevocations checks that revs are ordered oldest revocation first and
// each revokes one kind of thing, and returns them normalised, those
// revoked at the same time ordered by what they revoke.
func normRevocations(t *testing.T, revs []store.Revocation) []store.Revocation {
	t.Helper()
	out := make([]store.Revocation, 0, len(revs))
	for i, r := range revs {
		if n := btoi(r.JTI != "") + btoi(r.FamilyID != "") + btoi(r.Subject != ""); n != 1 {
			t.Errorf("revocation %+v sets %d of JTI, FamilyID and Subject, want 1", r, n)
		}
		if r.Subject == "" && !r.NotBefore.IsZero() {
			t.Errorf("revocation %+v has a NotBefore but no Subject", r)
		}
		r.NotBefore = utc(t, "revocation NotBefore", r.NotBefore)
		r.ExpiresAt = utc(t, "revocation ExpiresAt", r.ExpiresAt)
		r.RevokedAt = utc(t, "revocation RevokedAt", r.RevokedAt)
		if i > 0 && r.RevokedAt.Before(out[i-1].RevokedAt) {
			t.Errorf("revocations not ordered by revocation time: %+v", revs)
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b store.Revocation) int {
		return cmp.Or(a.RevokedAt.Compare(b.RevokedAt), strings.Compare(revocationKey(a), revocationKey(b)))
	})
	return list(out)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// revocationKey names what r revokes: "jti:", "family:" or "subject:"
// followed by its name.
func revocationKey(r store.Revocation) string {
	switch {
	case r.JTI != "":
		return "jti:" + r.JTI
	case r.FamilyID != "":
		return "family:" + r.FamilyID
	default:
		return "subject:" + r.Subject
	}
}

// revocations lists the revocations Revocations returns at now, normalised.
func revocations(ctx context.Context, t *testing.T, s store.Store, now time.Time) []store.Revocation {
	t.Helper()
	revs, err := s.Revocations(ctx, now)
	if err != nil {
		t.Fatalf("Revocations: %v", err)
	}
	return normRevocations(t, revs)
}

// revocationsSince lists the revocations RevocationsSince returns,
// normalised.
func revocationsSince(ctx context.Context, t *testing.T, s store.Store, since, now time.Time) []store.Revocation {
	t.Helper()
	revs, err := s.RevocationsSince(ctx, since, now)
	if err != nil {
		t.Fatalf("RevocationsSince: %v", err)
	}
	return normRevocations(t, revs)
}

// revokedKeys names (see revocationKey) what the revocations listed at now
// revoke, each listed once.
func revokedKeys(ctx context.Context, t *testing.T, s store.Store, now time.Time) map[string]bool {
	t.Helper()
	revs := revocations(ctx, t, s, now)
	keys := make(map[string]bool, len(revs))
	for _, r := range revs {
		k := revocationKey(r)
		if keys[k] {
			t.Errorf("Revocations lists %s twice", k)
		}
		keys[k] = true
	}
	return keys
}

// concurrently runs fn(0), ..., fn(n-1) in n goroutines released together,
// and returns their errors once all have returned. It fails t if they have
// not returned when ctx ends.
func concurrently(ctx context.Context, t *testing.T, n int, fn func(i int) error) []error {
	t.Helper()
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return errs
	case <-ctx.Done():
		t.Fatalf("goroutines still running: %v", ctx.Err())
		return nil
	}
}
