package factors

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
	"github.com/gatehouse/gatehouse/identity/users"
)

// totpFixture is a Service over a fresh SQLite store holding the user
// trader, at a fixed time, with the brute-force defence's waits skipped.
type totpFixture struct {
	st   *sqlite.Store
	user store.User
	s    *Service
	kek  []byte
}

// newTOTPFixture builds one at now. The checker and the Service use the
// store as checkerStore and factorStore return it (nil: the store itself),
// so that a test can wrap either to act at a given moment of a check.
func newTOTPFixture(t *testing.T, now time.Time, checkerStore func(*sqlite.Store) users.CheckerStore, factorStore func(*sqlite.Store) store.MFA) *totpFixture {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gatehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	user := store.User{Username: "trader", Subject: "sub-trader", PasswordHash: "x", Created: now, Updated: now}
	if err := st.CreateUser(ctx, user); err != nil {
		t.Fatal(err)
	}
	var cs users.CheckerStore = st
	if checkerStore != nil {
		cs = checkerStore(st)
	}
	var fs store.MFA = st
	if factorStore != nil {
		fs = factorStore(st)
	}
	checker, err := users.NewChecker(users.CheckerConfig{Store: cs, Now: func() time.Time { return now },
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	kek := bytes.Repeat([]byte{7}, 32)
	s, err := New(Config{Store: fs, Checker: checker, Issuer: "Gatehouse", KEK: kek, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return &totpFixture{st: st, user: user, s: s, kek: kek}
}

// put stores secret, sealed, as the user's TOTP factor, replacing any.
func (f *totpFixture) put(ctx context.Context, t *testing.T, secret []byte, now time.Time) {
	sealed, err := keys.SealSecret(f.kek, secret, sealName(f.user.Subject))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.PutTOTP(ctx, store.TOTPFactor{Subject: f.user.Subject, Secret: sealed, Created: now}); err != nil {
		t.Fatal(err)
	}
}
