package factors

import (
	"bytes"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/mfa"
)

// TestSeed: Seed enrols a users file's secret for a user without a TOTP
// factor, sealed (the store holds no clear secret) and with no step used,
// so a code of now passes CheckTOTP once; a user with a factor keeps it
// (a second seed, of another secret, changes nothing); a reset user is
// seeded again; a secret under 128 bits is refused. It failed when Seed
// put the factor without looking (the second seed replaced the first)
// and when it stored the secret unsealed.
func TestSeed(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	fx := newTOTPFixture(t, now, nil, nil)
	st, user, s := fx.st, fx.user, fx.s
	first := bytes.Repeat([]byte{0x5a}, 20)
	second := bytes.Repeat([]byte{0xa5}, 16)

	if did, err := s.Seed(ctx, user, first[:15]); err == nil || did {
		t.Fatalf("a 120-bit secret seeded: %v, %v", did, err)
	}
	if did, err := s.Seed(ctx, user, first); err != nil || !did {
		t.Fatalf("seeding a user without a factor: %v, %v", did, err)
	}
	f, err := st.TOTP(ctx, user.Subject)
	if err != nil || f.LastStep != 0 || !f.Created.Equal(now) || bytes.Contains(f.Secret, first) {
		t.Fatalf("factor stored: last step %d, created %v, clear secret %v, %v", f.LastStep, f.Created, bytes.Contains(f.Secret, first), err)
	}
	if err := s.CheckTOTP(ctx, user, mfa.Code(first, mfa.Step(now)), "192.0.2.1"); err != nil {
		t.Fatalf("a code of the seeded secret: %v", err)
	}
	if did, err := s.Seed(ctx, user, second); err != nil || did {
		t.Fatalf("seeding a user with a factor: %v, %v", did, err)
	}
	if g, _ := st.TOTP(ctx, user.Subject); !bytes.Equal(g.Secret, f.Secret) || g.LastStep != mfa.Step(now) {
		t.Fatalf("the factor changed: last step %d", g.LastStep)
	}
	if st, err := s.Status(ctx, user.Subject); err != nil || !st.TOTP || !st.TOTPSince.Equal(now) {
		t.Fatalf("status %+v, %v", st, err)
	}
	if err := s.Reset(ctx, user); err != nil {
		t.Fatal(err)
	}
	if did, err := s.Seed(ctx, user, second); err != nil || !did {
		t.Fatalf("seeding a reset user: %v, %v", did, err)
	}
	if err := s.CheckTOTP(ctx, user, mfa.Code(second, mfa.Step(now)+1), "192.0.2.1"); err != nil {
		t.Fatalf("a code of the secret seeded after the reset: %v", err)
	}
}
