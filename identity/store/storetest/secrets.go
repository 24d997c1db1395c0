package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gatehouse/gatehouse/identity/store"
)

var secretCases = []testCase{
	{"CreatedOnce", testSecretCreatedOnce},
	{"NamesAreIndependent", testSecretNamesAreIndependent},
	{"GenerateFails", testSecretGenerateFails},
	{"ConcurrentCreate", testSecretConcurrentCreate},
}

// constant returns a generate function that returns b and counts its calls.
func constant(b []byte, calls *atomic.Int32) func() ([]byte, error) {
	return func() ([]byte, error) {
		calls.Add(1)
		return bytes.Clone(b), nil
	}
}

func testSecretCreatedOnce(t *testing.T, s store.Store) {
	ctx := Context(t)
	var calls atomic.Int32
	want := []byte("first secret value, 32 bytes....")
	got, err := s.Secret(ctx, "refresh", constant(want, &calls))
	wantErr(t, "Secret", err, nil)
	equal(t, "created secret", got, want)
	equal(t, "generate calls", calls.Load(), int32(1))

	got, err = s.Secret(ctx, "refresh", constant([]byte("another value"), &calls))
	wantErr(t, "Secret again", err, nil)
	equal(t, "existing secret", got, want)
	equal(t, "generate calls after the second Secret", calls.Load(), int32(1))
}

func testSecretNamesAreIndependent(t *testing.T, s store.Store) {
	ctx := Context(t)
	var calls atomic.Int32
	for _, name := range []string{"a", "b", "A"} {
		got, err := s.Secret(ctx, name, constant([]byte("value of "+name), &calls))
		wantErr(t, "Secret "+name, err, nil)
		equal(t, "secret "+name, string(got), "value of "+name)
	}
	for _, name := range []string{"a", "b", "A"} {
		got, err := s.Secret(ctx, name, constant([]byte("other"), &calls))
		wantErr(t, "Secret "+name, err, nil)
		equal(t, "secret "+name, string(got), "value of "+name)
	}
	equal(t, "generate calls", calls.Load(), int32(3))
}

func testSecretGenerateFails(t *testing.T, s store.Store) {
	ctx := Context(t)
	boom := errors.New("no entropy")
	_, err := s.Secret(ctx, "x", func() ([]byte, error) { return nil, boom })
	wantErr(t, "Secret with a failing generate", err, boom)

	var calls atomic.Int32
	got, err := s.Secret(ctx, "x", constant([]byte("later"), &calls))
	wantErr(t, "Secret after a failed generate", err, nil)
	equal(t, "secret", string(got), "later")
	equal(t, "generate calls", calls.Load(), int32(1))
}

// testSecretConcurrentCreate: many callers race to create one secret, each
// generating a different value; all get the one that was stored.
func testSecretConcurrentCreate(t *testing.T, s store.Store) {
	ctx := Context(t)
	const n = 32
	got := make([][]byte, n)
	errs := concurrently(ctx, t, n, func(i int) error {
		var err error
		got[i], err = s.Secret(ctx, "shared", func() ([]byte, error) {
			return fmt.Appendf(nil, "value of goroutine %d", i), nil
		})
		return err
	})
	for i, err := range errs {
		wantErr(t, fmt.Sprintf("Secret in goroutine %d", i), err, nil)
	}
	stored, err := s.Secret(ctx, "shared", func() ([]byte, error) {
		return nil, errors.New("generate called for an existing secret")
	})
	wantErr(t, "Secret after the race", err, nil)
	for i := range got {
		if !bytes.Equal(got[i], stored) {
			t.Errorf("goroutine %d got %q, the store holds %q", i, got[i], stored)
		}
	}
}
