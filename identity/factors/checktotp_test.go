package factors

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/mfa"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
	"github.com/gatehouse/gatehouse/identity/users"
)

// onPairAdmit is the checker's store, which runs hook when the checker
// asks for the (user, source) pair's lock: the last wait before the code
// is checked, where a factor may change under a check that waits.
type onPairAdmit struct {
	*sqlite.Store
	hook func(ctx context.Context)
}

func (s *onPairAdmit) Admit(ctx context.Context, key string, now time.Time, window time.Duration, limit int, lockout time.Duration) (store.Counter, bool, error) {
	if strings.HasPrefix(key, "pair:") && s.hook != nil {
		s.hook(ctx)
	}
	return s.Store.Admit(ctx, key, now, window, limit, lockout)
}

// TestCheckTOTPReadsTheFactorUnderTheLock: a code is checked against the
// factor the user has once the check is admitted, not the one read
// before it waited: a code of a factor enrolled again, or reset, while the
// check waited for the pair's lock is refused, and a code of the new
// factor passes. It failed when CheckTOTP read the secret before the
// brute-force defence (the old factor's code passed, once, against the
// new factor's step).
func TestCheckTOTPReadsTheFactorUnderTheLock(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var cs *onPairAdmit
	fx := newTOTPFixture(t, now, func(st *sqlite.Store) users.CheckerStore {
		cs = &onPairAdmit{Store: st}
		return cs
	}, nil)
	st, user, s := fx.st, fx.user, fx.s
	old, replaced := bytes.Repeat([]byte{0x11}, mfa.SecretBytes), bytes.Repeat([]byte{0x22}, mfa.SecretBytes)
	put := func(ctx context.Context, secret []byte) { fx.put(ctx, t, secret, now) }
	step := mfa.Step(now)

	// Enrolled again while the check waits: the old factor's code is
	// wrong, the new one's right.
	put(ctx, old)
	cs.hook = func(ctx context.Context) { put(ctx, replaced) }
	if err := s.CheckTOTP(ctx, user, mfa.Code(old, step), "192.0.2.1"); !errors.Is(err, users.ErrBadCredentials) {
		t.Fatalf("a code of the factor replaced while the check waited: %v, want %v", err, users.ErrBadCredentials)
	}
	cs.hook = nil
	if err := s.CheckTOTP(ctx, user, mfa.Code(replaced, step), "192.0.2.1"); err != nil {
		t.Fatalf("a code of the new factor: %v", err)
	}

	// Reset while the check waits: no factor, nothing accepted.
	put(ctx, old)
	cs.hook = func(ctx context.Context) {
		if err := st.ResetMFA(ctx, user.Subject); err != nil {
			t.Error(err)
		}
	}
	if err := s.CheckTOTP(ctx, user, mfa.Code(old, step+1), "192.0.2.1"); !errors.Is(err, ErrNoFactor) {
		t.Fatalf("a code of the factor reset while the check waited: %v, want %v", err, ErrNoFactor)
	}
}

// onAdvance is the factors' store, which runs hook before it advances a
// factor's step: the moment between a code's check and its compare-and-set.
type onAdvance struct {
	*sqlite.Store
	hook func(ctx context.Context)
}

func (s *onAdvance) AdvanceTOTP(ctx context.Context, subject string, secret []byte, step int64) (bool, error) {
	if s.hook != nil {
		s.hook(ctx)
	}
	return s.Store.AdvanceTOTP(ctx, subject, secret, step)
}

// TestCheckTOTPAdvancesOnlyTheFactorChecked: a factor enrolled again
// between a code's check and the advance of its step takes nothing from
// that code: refused, and the new factor's step unmoved, so the new
// factor's code of that step still passes. It failed when AdvanceTOTP
// compared the step alone (the old factor's code passed against the new
// factor).
func TestCheckTOTPAdvancesOnlyTheFactorChecked(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var fs *onAdvance
	fx := newTOTPFixture(t, now, nil, func(st *sqlite.Store) store.MFA {
		fs = &onAdvance{Store: st}
		return fs
	})
	user, s := fx.user, fx.s
	old, replaced := bytes.Repeat([]byte{0x11}, mfa.SecretBytes), bytes.Repeat([]byte{0x22}, mfa.SecretBytes)
	put := func(ctx context.Context, secret []byte) { fx.put(ctx, t, secret, now) }
	step := mfa.Step(now)
	put(ctx, old)
	fs.hook = func(ctx context.Context) { put(ctx, replaced) }
	if err := s.CheckTOTP(ctx, user, mfa.Code(old, step), "192.0.2.1"); !errors.Is(err, users.ErrBadCredentials) {
		t.Fatalf("a code of the factor replaced before its step advanced: %v, want %v", err, users.ErrBadCredentials)
	}
	fs.hook = nil
	if err := s.CheckTOTP(ctx, user, mfa.Code(replaced, step), "192.0.2.1"); err != nil {
		t.Fatalf("the new factor's code of the same step: %v", err)
	}
}
