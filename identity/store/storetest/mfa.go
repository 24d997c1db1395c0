package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var mfaCases = []testCase{
	{"TOTPPutAndRead", testTOTPPutAndRead},
	{"TOTPAdvanceOnce", testTOTPAdvanceOnce},
	{"TOTPAdvanceConcurrent", testTOTPAdvanceConcurrent},
	{"RecoveryCodes", testRecoveryCodes},
	{"RecoverySpendConcurrent", testRecoverySpendConcurrent},
	{"RecoveryReplaceConcurrent", testRecoveryReplaceConcurrent},
	{"DeleteUserDeletesFactors", testDeleteUserDeletesFactors},
	{"ResetMFA", testResetMFA},
}

// burst is how many goroutines race for one code in the concurrent cases.
const burst = 16

func testTOTPPutAndRead(t *testing.T, s store.Store) {
	ctx := Context(t)
	_, err := s.TOTP(ctx, "sub-a")
	wantErr(t, "TOTP of a subject without one", err, store.ErrNotFound)
	wantErr(t, "DeleteTOTP of a subject without one", s.DeleteTOTP(ctx, "sub-a"), store.ErrNotFound)
	_, err = s.AdvanceTOTP(ctx, "sub-a", []byte("x"), 10)
	wantErr(t, "AdvanceTOTP of a subject without one", err, store.ErrNotFound)

	f := store.TOTPFactor{Subject: "sub-a", Secret: []byte("sealed secret a"), LastStep: 60_000_000, Created: t0}
	wantErr(t, "PutTOTP", s.PutTOTP(ctx, f), nil)
	wantErr(t, "PutTOTP of another subject", s.PutTOTP(ctx, store.TOTPFactor{Subject: "sub-b", Secret: []byte("b"), Created: t0}), nil)
	got, err := s.TOTP(ctx, "sub-a")
	wantErr(t, "TOTP", err, nil)
	equal(t, "the factor read", got, f)
	_, err = s.TOTP(ctx, "SUB-A")
	wantErr(t, "TOTP of the subject in another case", err, store.ErrNotFound)

	// A new enrolment replaces the factor whole: its secret, its step.
	g := store.TOTPFactor{Subject: "sub-a", Secret: []byte("sealed secret a, again"), LastStep: 0, Created: t0.Add(time.Hour)}
	wantErr(t, "PutTOTP again", s.PutTOTP(ctx, g), nil)
	got, err = s.TOTP(ctx, "sub-a")
	wantErr(t, "TOTP after the second PutTOTP", err, nil)
	equal(t, "the factor replaced", got, g)

	wantErr(t, "DeleteTOTP", s.DeleteTOTP(ctx, "sub-a"), nil)
	_, err = s.TOTP(ctx, "sub-a")
	wantErr(t, "TOTP after DeleteTOTP", err, store.ErrNotFound)
	_, err = s.TOTP(ctx, "sub-b")
	wantErr(t, "the other subject's factor", err, nil)
}

// testTOTPAdvanceOnce: the last step moves only forward, and a step is
// accepted once.
func testTOTPAdvanceOnce(t *testing.T, s store.Store) {
	ctx := Context(t)
	wantErr(t, "PutTOTP", s.PutTOTP(ctx, store.TOTPFactor{Subject: "sub", Secret: []byte("x"), LastStep: 100, Created: t0}), nil)
	for _, c := range []struct {
		step int64
		want bool
	}{{99, false}, {100, false}, {101, true}, {101, false}, {100, false}, {103, true}, {102, false}} {
		got, err := s.AdvanceTOTP(ctx, "sub", []byte("x"), c.step)
		wantErr(t, "AdvanceTOTP", err, nil)
		if got != c.want {
			t.Fatalf("AdvanceTOTP to %d: %v, want %v", c.step, got, c.want)
		}
	}
	f, err := s.TOTP(ctx, "sub")
	wantErr(t, "TOTP", err, nil)
	equal(t, "the last step", f.LastStep, int64(103))
	// A code checked against a factor since replaced moves nothing.
	got, err := s.AdvanceTOTP(ctx, "sub", []byte("y"), 104)
	wantErr(t, "AdvanceTOTP with another secret", err, nil)
	if got {
		t.Fatal("AdvanceTOTP with a replaced factor's secret advanced")
	}
	f, err = s.TOTP(ctx, "sub")
	wantErr(t, "TOTP", err, nil)
	equal(t, "the last step after a replaced factor's code", f.LastStep, int64(103))
}

// testTOTPAdvanceConcurrent: of a burst of requests with one code, all at
// once, exactly one advances the step.
func testTOTPAdvanceConcurrent(t *testing.T, s store.Store) {
	ctx := Context(t)
	wantErr(t, "PutTOTP", s.PutTOTP(ctx, store.TOTPFactor{Subject: "sub", Secret: []byte("x"), LastStep: 100, Created: t0}), nil)
	for step := int64(101); step <= 103; step++ {
		var won atomic.Int32
		race(t, func() error {
			ok, err := s.AdvanceTOTP(ctx, "sub", []byte("x"), step)
			if ok {
				won.Add(1)
			}
			return err
		})
		equal(t, "requests that advanced the step", won.Load(), int32(1))
	}
}

func testRecoveryCodes(t *testing.T, s store.Store) {
	ctx := Context(t)
	got, err := s.RecoveryCodes(ctx, "sub")
	wantErr(t, "RecoveryCodes of a subject without any", err, nil)
	equal(t, "codes of a subject without any", len(got), 0)

	first := [][]byte{hash("r1"), hash("r2"), hash("r3")}
	wantErr(t, "ReplaceRecoveryCodes", s.ReplaceRecoveryCodes(ctx, "sub", first, t0), nil)
	wantErr(t, "ReplaceRecoveryCodes of another subject", s.ReplaceRecoveryCodes(ctx, "other", [][]byte{hash("r1")}, t0), nil)
	sameHashes(t, "the codes stored", codes(t, s, "sub"), first)

	ok, err := s.SpendRecoveryCode(ctx, "sub", hash("r2"))
	wantErr(t, "SpendRecoveryCode", err, nil)
	equal(t, "a code spent", ok, true)
	ok, err = s.SpendRecoveryCode(ctx, "sub", hash("r2"))
	wantErr(t, "SpendRecoveryCode again", err, nil)
	equal(t, "the same code spent again", ok, false)
	ok, err = s.SpendRecoveryCode(ctx, "sub", hash("never issued"))
	wantErr(t, "SpendRecoveryCode of a code never issued", err, nil)
	equal(t, "a code never issued", ok, false)
	sameHashes(t, "the codes left", codes(t, s, "sub"), [][]byte{hash("r1"), hash("r3")})
	sameHashes(t, "the other subject's codes", codes(t, s, "other"), [][]byte{hash("r1")})

	// A new set replaces the old one whole: its codes no longer work.
	second := [][]byte{hash("s1"), hash("s2")}
	wantErr(t, "ReplaceRecoveryCodes again", s.ReplaceRecoveryCodes(ctx, "sub", second, t0.Add(time.Hour)), nil)
	sameHashes(t, "the new set", codes(t, s, "sub"), second)
	ok, err = s.SpendRecoveryCode(ctx, "sub", hash("r1"))
	wantErr(t, "SpendRecoveryCode of the old set", err, nil)
	equal(t, "a code of the old set", ok, false)

	wantErr(t, "ReplaceRecoveryCodes with none", s.ReplaceRecoveryCodes(ctx, "sub", nil, t0), nil)
	equal(t, "codes after removing them", len(codes(t, s, "sub")), 0)
}

// testRecoverySpendConcurrent: of a burst spending one code, all at once,
// exactly one succeeds.
func testRecoverySpendConcurrent(t *testing.T, s store.Store) {
	ctx := Context(t)
	wantErr(t, "ReplaceRecoveryCodes", s.ReplaceRecoveryCodes(ctx, "sub", [][]byte{hash("r1"), hash("r2")}, t0), nil)
	var won atomic.Int32
	race(t, func() error {
		ok, err := s.SpendRecoveryCode(ctx, "sub", hash("r1"))
		if ok {
			won.Add(1)
		}
		return err
	})
	equal(t, "requests that spent the code", won.Load(), int32(1))
	sameHashes(t, "the codes left", codes(t, s, "sub"), [][]byte{hash("r2")})
}

// testRecoveryReplaceConcurrent: of a burst of replacements, all at once,
// each with a set of its own, exactly one set remains whole, for a
// subject that had codes and for one that had none.
func testRecoveryReplaceConcurrent(t *testing.T, s store.Store) {
	ctx := Context(t)
	wantErr(t, "ReplaceRecoveryCodes", s.ReplaceRecoveryCodes(ctx, "had", [][]byte{hash("old")}, t0), nil)
	for _, subject := range []string{"had", "none"} {
		var n atomic.Int32
		race(t, func() error {
			i := n.Add(1)
			set := [][]byte{hash(fmt.Sprint(subject, i, "a")), hash(fmt.Sprint(subject, i, "b"))}
			return s.ReplaceRecoveryCodes(ctx, subject, set, t0)
		})
		got := codes(t, s, subject)
		whole := false
		for i := range int32(burst) {
			set := [][]byte{hash(fmt.Sprint(subject, i+1, "a")), hash(fmt.Sprint(subject, i+1, "b"))}
			if len(got) == 2 && (bytes.Equal(got[0], set[0]) || bytes.Equal(got[0], set[1])) {
				sameHashes(t, "the set left for "+subject, got, set)
				whole = true
			}
		}
		if !whole {
			t.Fatalf("subject %s: %d codes left, not one set of 2", subject, len(got))
		}
	}
	wantErr(t, "PutTOTP without a time", errIf(s.PutTOTP(ctx, store.TOTPFactor{Subject: "x", Secret: []byte("x")}) == nil), nil)
	wantErr(t, "ReplaceRecoveryCodes without a time", errIf(s.ReplaceRecoveryCodes(ctx, "x", [][]byte{hash("r")}, time.Time{}) == nil), nil)
}

// errIf is an error when refused is true: a call that should have failed
// and did not.
func errIf(accepted bool) error {
	if accepted {
		return errors.New("accepted")
	}
	return nil
}

func testDeleteUserDeletesFactors(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice, bob := user("alice"), user("bob")
	for _, u := range []store.User{alice, bob} {
		wantErr(t, "CreateUser "+u.Username, s.CreateUser(ctx, u), nil)
		wantErr(t, "PutTOTP "+u.Username, s.PutTOTP(ctx, store.TOTPFactor{Subject: u.Subject, Secret: []byte("x"), Created: t0}), nil)
		wantErr(t, "ReplaceRecoveryCodes "+u.Username, s.ReplaceRecoveryCodes(ctx, u.Subject, [][]byte{hash("r")}, t0), nil)
	}
	_, err := s.DeleteUser(ctx, "alice", t0.Add(time.Hour), t0.Add(2*time.Hour))
	wantErr(t, "DeleteUser", err, nil)
	_, err = s.TOTP(ctx, alice.Subject)
	wantErr(t, "the deleted user's TOTP factor", err, store.ErrNotFound)
	equal(t, "the deleted user's recovery codes", len(codes(t, s, alice.Subject)), 0)
	_, err = s.TOTP(ctx, bob.Subject)
	wantErr(t, "another user's TOTP factor", err, nil)
	equal(t, "another user's recovery codes", len(codes(t, s, bob.Subject)), 1)
}

// race runs burst calls of fn at once, and fails t on any error.
func race(t *testing.T, fn func() error) {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, burst)
	for range burst {
		wg.Go(func() {
			<-start
			errs <- fn()
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		wantErr(t, "a racing call", err, nil)
	}
}

func codes(t *testing.T, s store.Store, subject string) [][]byte {
	t.Helper()
	got, err := s.RecoveryCodes(Context(t), subject)
	wantErr(t, "RecoveryCodes", err, nil)
	return got
}

// sameHashes fails t unless got and want hold the same hashes, in any
// order.
func sameHashes(t *testing.T, what string, got, want [][]byte) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, bytes.Compare)
	slices.SortFunc(want, bytes.Compare)
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("%s: %x, want %x", what, got, want)
	}
}

// testResetMFA: ResetMFA removes the subject's TOTP factor and recovery
// codes, keeps its passkeys and every other subject's factors, and
// succeeds for a subject that has nothing to remove.
func testResetMFA(t *testing.T, s store.Store) {
	ctx := Context(t)
	for _, sub := range []string{"sub-a", "sub-b"} {
		wantErr(t, "PutTOTP "+sub, s.PutTOTP(ctx, store.TOTPFactor{Subject: sub, Secret: []byte("x"), Created: t0}), nil)
		wantErr(t, "ReplaceRecoveryCodes "+sub, s.ReplaceRecoveryCodes(ctx, sub, [][]byte{hash("r1"), hash("r2")}, t0), nil)
	}
	k := passkey("sub-a", "key-a", 1)
	wantErr(t, "AddPasskey", s.AddPasskey(ctx, k), nil)

	wantErr(t, "ResetMFA", s.ResetMFA(ctx, "sub-a"), nil)
	_, err := s.TOTP(ctx, "sub-a")
	wantErr(t, "TOTP after ResetMFA", err, store.ErrNotFound)
	equal(t, "codes after ResetMFA", len(codes(t, s, "sub-a")), 0)
	equal(t, "passkeys after ResetMFA", len(readPasskeys(t, s, "sub-a")), 1)
	_, err = s.TOTP(ctx, "sub-b")
	wantErr(t, "the other subject's factor", err, nil)
	sameHashes(t, "the other subject's codes", codes(t, s, "sub-b"), [][]byte{hash("r1"), hash("r2")})

	wantErr(t, "ResetMFA again", s.ResetMFA(ctx, "sub-a"), nil)
	wantErr(t, "ResetMFA of a subject with no factor", s.ResetMFA(ctx, "sub-none"), nil)
}
