package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var passkeyCases = []testCase{
	{"AddAndRead", testPasskeyAddAndRead},
	{"Bounds", testPasskeyBounds},
	{"SignCount", testPasskeySignCount},
	{"UseConcurrent", testPasskeyUseConcurrent},
	{"RenameAndDelete", testPasskeyRenameAndDelete},
	{"Limit", testPasskeyLimit},
	{"LimitConcurrent", testPasskeyLimitConcurrent},
	{"DeleteUserDeletesPasskeys", testDeleteUserDeletesPasskeys},
}

// passkey is a passkey of subject with credential id id, registered at
// t0 plus minutes.
func passkey(subject, id string, minutes int) store.Passkey {
	return store.Passkey{
		ID: []byte(id), Subject: subject, Name: "key " + id, PublicKey: []byte("cose key " + id),
		AAGUID:     []byte("0123456789abcdef"),
		Transports: []string{"internal", "hybrid"}, BackupEligible: true, BackupState: true,
		Created: t0.Add(time.Duration(minutes) * time.Minute),
	}
}

// readPasskeys is the subject's passkeys, times ready for comparison.
func readPasskeys(t *testing.T, s store.Store, subject string) []store.Passkey {
	t.Helper()
	got, err := s.Passkeys(Context(t), subject)
	wantErr(t, "Passkeys", err, nil)
	for i := range got {
		got[i].Created = utc(t, "Created", got[i].Created)
		got[i].LastUsed = utc(t, "LastUsed", got[i].LastUsed)
	}
	return got
}

func testPasskeyAddAndRead(t *testing.T, s store.Store) {
	ctx := Context(t)
	equal(t, "passkeys of a subject without any", len(readPasskeys(t, s, "sub-a")), 0)
	_, err := s.PasskeyByID(ctx, []byte("k1"))
	wantErr(t, "PasskeyByID of an unknown id", err, store.ErrNotFound)

	// Added out of order: listed oldest first.
	k1, k2 := passkey("sub-a", "k1", 2), passkey("sub-a", "k2", 1)
	k2.AAGUID, k2.Transports, k2.BackupEligible, k2.BackupState, k2.SignCount = nil, nil, false, false, 7
	wantErr(t, "AddPasskey k1", s.AddPasskey(ctx, k1), nil)
	wantErr(t, "AddPasskey k2", s.AddPasskey(ctx, k2), nil)
	wantErr(t, "AddPasskey of another subject", s.AddPasskey(ctx, passkey("sub-b", "k3", 0)), nil)
	equal(t, "sub-a's passkeys", readPasskeys(t, s, "sub-a"), []store.Passkey{k2, k1})
	equal(t, "sub-b's passkeys", len(readPasskeys(t, s, "sub-b")), 1)
	equal(t, "passkeys of the subject in another case", len(readPasskeys(t, s, "SUB-A")), 0)

	got, err := s.PasskeyByID(ctx, []byte("k1"))
	wantErr(t, "PasskeyByID", err, nil)
	got.Created = utc(t, "Created", got.Created)
	equal(t, "the passkey read by id", got, k1)
	_, err = s.PasskeyByID(ctx, []byte("K1"))
	wantErr(t, "PasskeyByID of the id in another case", err, store.ErrNotFound)

	// A credential id is unique across subjects: another user cannot
	// claim a credential someone registered.
	wantErr(t, "AddPasskey of a taken id", s.AddPasskey(ctx, passkey("sub-a", "k1", 3)), store.ErrAlreadyExists)
	wantErr(t, "AddPasskey of another subject's id", s.AddPasskey(ctx, passkey("sub-c", "k3", 3)), store.ErrAlreadyExists)
	equal(t, "sub-c's passkeys", len(readPasskeys(t, s, "sub-c")), 0)
}

// testPasskeyBounds: a passkey out of its bounds is refused whole.
func testPasskeyBounds(t *testing.T, s store.Store) {
	ctx := Context(t)
	for name, change := range map[string]func(p *store.Passkey){
		"no id":              func(p *store.Passkey) { p.ID = nil },
		"a long id":          func(p *store.Passkey) { p.ID = make([]byte, store.MaxCredentialID+1) },
		"no subject":         func(p *store.Passkey) { p.Subject = "" },
		"a long name":        func(p *store.Passkey) { p.Name = strings.Repeat("n", store.MaxPasskeyName+1) },
		"no public key":      func(p *store.Passkey) { p.PublicKey = nil },
		"a long key":         func(p *store.Passkey) { p.PublicKey = make([]byte, store.MaxPasskeyPublicKey+1) },
		"a long AAGUID":      func(p *store.Passkey) { p.AAGUID = make([]byte, 17) },
		"no time":            func(p *store.Passkey) { p.Created = time.Time{} },
		"an empty transport": func(p *store.Passkey) { p.Transports = []string{""} },
	} {
		p := passkey("sub", "k", 0)
		change(&p)
		wantErr(t, "AddPasskey with "+name, errIf(s.AddPasskey(ctx, p) == nil), nil)
	}
	equal(t, "passkeys stored", len(readPasskeys(t, s, "sub")), 0)
	p := passkey("sub", "k", 0)
	p.Name = strings.Repeat("n", store.MaxPasskeyName)
	wantErr(t, "AddPasskey with the longest name", s.AddPasskey(ctx, p), nil)
	wantErr(t, "RenamePasskey to a long name",
		errIf(s.RenamePasskey(ctx, "sub", p.ID, strings.Repeat("n", store.MaxPasskeyName+1)) == nil), nil)
	_, err := s.UsePasskey(ctx, p.ID, 1, time.Time{})
	wantErr(t, "UsePasskey without a time", errIf(err == nil), nil)
}

// testPasskeySignCount: a count is accepted only above the stored one,
// or 0 when both are (an authenticator without a counter).
func testPasskeySignCount(t *testing.T, s store.Store) {
	ctx := Context(t)
	_, err := s.UsePasskey(ctx, []byte("none"), 1, t0)
	wantErr(t, "UsePasskey of an unknown id", err, store.ErrNotFound)

	wantErr(t, "AddPasskey counting", s.AddPasskey(ctx, passkey("sub", "counting", 0)), nil)
	wantErr(t, "AddPasskey without a counter", s.AddPasskey(ctx, passkey("sub", "zero", 0)), nil)
	for i, c := range []struct {
		id    string
		count uint32
		want  bool
	}{
		{"counting", 5, true}, {"counting", 5, false}, {"counting", 4, false}, {"counting", 0, false},
		{"counting", 6, true}, {"counting", 1<<32 - 1, true}, {"counting", 1<<32 - 1, false},
		{"zero", 0, true}, {"zero", 0, true}, {"zero", 3, true}, {"zero", 0, false}, {"zero", 3, false},
	} {
		at := t0.Add(time.Duration(i+1) * time.Minute)
		before, err := s.PasskeyByID(ctx, []byte(c.id))
		wantErr(t, "PasskeyByID", err, nil)
		got, err := s.UsePasskey(ctx, []byte(c.id), c.count, at)
		wantErr(t, "UsePasskey", err, nil)
		if got != c.want {
			t.Fatalf("use %d: UsePasskey of %s with count %d (stored %d): %v, want %v", i, c.id, c.count, before.SignCount, got, c.want)
		}
		after, err := s.PasskeyByID(ctx, []byte(c.id))
		wantErr(t, "PasskeyByID", err, nil)
		want := before
		if c.want {
			want.SignCount, want.LastUsed = c.count, at
		}
		after.Created, after.LastUsed = utc(t, "Created", after.Created), utc(t, "LastUsed", after.LastUsed)
		want.Created, want.LastUsed = utc(t, "Created", want.Created), utc(t, "LastUsed", want.LastUsed)
		equal(t, fmt.Sprintf("use %d: the passkey after", i), after, want)
	}
}

// testPasskeyUseConcurrent: of a burst of uses with one count, all at
// once, exactly one is accepted.
func testPasskeyUseConcurrent(t *testing.T, s store.Store) {
	ctx := Context(t)
	wantErr(t, "AddPasskey", s.AddPasskey(ctx, passkey("sub", "k", 0)), nil)
	for count := uint32(1); count <= 3; count++ {
		var won atomic.Int32
		race(t, func() error {
			ok, err := s.UsePasskey(ctx, []byte("k"), count, t0)
			if ok {
				won.Add(1)
			}
			return err
		})
		equal(t, "uses accepted", won.Load(), int32(1))
	}
}

func testPasskeyRenameAndDelete(t *testing.T, s store.Store) {
	ctx := Context(t)
	wantErr(t, "AddPasskey", s.AddPasskey(ctx, passkey("sub-a", "k1", 0)), nil)
	wantErr(t, "AddPasskey", s.AddPasskey(ctx, passkey("sub-a", "k2", 1)), nil)
	wantErr(t, "RenamePasskey of another subject's", s.RenamePasskey(ctx, "sub-b", []byte("k1"), "mine"), store.ErrNotFound)
	wantErr(t, "RenamePasskey of an unknown id", s.RenamePasskey(ctx, "sub-a", []byte("k9"), "mine"), store.ErrNotFound)
	wantErr(t, "RenamePasskey", s.RenamePasskey(ctx, "sub-a", []byte("k1"), "laptop"), nil)
	got := readPasskeys(t, s, "sub-a")
	equal(t, "the names", []string{got[0].Name, got[1].Name}, []string{"laptop", "key k2"})

	wantErr(t, "DeletePasskey of another subject's", s.DeletePasskey(ctx, "sub-b", []byte("k1")), store.ErrNotFound)
	wantErr(t, "DeletePasskey", s.DeletePasskey(ctx, "sub-a", []byte("k1")), nil)
	wantErr(t, "DeletePasskey again", s.DeletePasskey(ctx, "sub-a", []byte("k1")), store.ErrNotFound)
	_, err := s.PasskeyByID(ctx, []byte("k1"))
	wantErr(t, "PasskeyByID of a deleted passkey", err, store.ErrNotFound)
	equal(t, "the passkeys left", len(readPasskeys(t, s, "sub-a")), 1)
}

func testPasskeyLimit(t *testing.T, s store.Store) {
	ctx := Context(t)
	for i := range store.MaxPasskeys {
		wantErr(t, "AddPasskey", s.AddPasskey(ctx, passkey("sub", fmt.Sprint("k", i), i)), nil)
	}
	wantErr(t, "AddPasskey beyond the bound", s.AddPasskey(ctx, passkey("sub", "one more", 0)), store.ErrTooManyPasskeys)
	wantErr(t, "AddPasskey of another subject", s.AddPasskey(ctx, passkey("other", "one more", 0)), nil)
	wantErr(t, "DeletePasskey", s.DeletePasskey(ctx, "sub", []byte("k0")), nil)
	wantErr(t, "AddPasskey after a delete", s.AddPasskey(ctx, passkey("sub", "again", 0)), nil)
	equal(t, "passkeys", len(readPasskeys(t, s, "sub")), store.MaxPasskeys)
}

// testPasskeyLimitConcurrent: a burst of adds, all at once, leaves at
// most MaxPasskeys.
func testPasskeyLimitConcurrent(t *testing.T, s store.Store) {
	ctx := Context(t)
	for i := range store.MaxPasskeys - burst/2 {
		wantErr(t, "AddPasskey", s.AddPasskey(ctx, passkey("sub", fmt.Sprint("k", i), i)), nil)
	}
	var n, refused atomic.Int32
	race(t, func() error {
		err := s.AddPasskey(ctx, passkey("sub", fmt.Sprint("racing", n.Add(1)), 0))
		if errors.Is(err, store.ErrTooManyPasskeys) {
			refused.Add(1)
			return nil
		}
		return err
	})
	equal(t, "passkeys", len(readPasskeys(t, s, "sub")), store.MaxPasskeys)
	equal(t, "adds refused", refused.Load(), int32(burst-burst/2))
}

func testDeleteUserDeletesPasskeys(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice, bob := user("alice"), user("bob")
	for _, u := range []store.User{alice, bob} {
		wantErr(t, "CreateUser "+u.Username, s.CreateUser(ctx, u), nil)
		wantErr(t, "AddPasskey "+u.Username, s.AddPasskey(ctx, passkey(u.Subject, u.Username, 0)), nil)
	}
	_, err := s.DeleteUser(ctx, "alice", t0.Add(time.Hour), t0.Add(2*time.Hour))
	wantErr(t, "DeleteUser", err, nil)
	equal(t, "the deleted user's passkeys", len(readPasskeys(t, s, alice.Subject)), 0)
	_, err = s.PasskeyByID(ctx, []byte("alice"))
	wantErr(t, "the deleted user's passkey by id", err, store.ErrNotFound)
	equal(t, "another user's passkeys", len(readPasskeys(t, s, bob.Subject)), 1)
}
