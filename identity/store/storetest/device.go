package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// RunDevice runs the conformance suite of store.DeviceStore (device
// authorizations, RFC 8628), apart from Run since a backend may implement
// Store without it. open returns a new, empty store for the test t and
// arranges for it to be closed; each subtest calls it once.
func RunDevice(t *testing.T, open func(t *testing.T) store.DeviceStore) {
	for _, c := range deviceCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

var deviceCases = []struct {
	name string
	run  func(t *testing.T, s store.DeviceStore)
}{
	{"PutAndRead", testDevicePutAndRead},
	{"Poll", testDevicePoll},
	{"Decide", testDeviceDecide},
	{"Consume", testDeviceConsume},
	{"DeleteExpired", testDeviceDeleteExpired},
	{"ConsumeRace", func(t *testing.T, s store.DeviceStore) { ConsumeDeviceConcurrently(t, 16, s) }},
	{"DecideRace", func(t *testing.T, s store.DeviceStore) { DecideDeviceConcurrently(t, 16, s) }},
	{"PollRace", testDevicePollRace},
	{"RevokeSubjectDenies", testDeviceRevokeSubjectDenies},
	{"AskedEntitlements", testDeviceAskedEntitlements},
}

// testDeviceRevokeSubjectDenies: ending a subject's sessions turns its
// approved authorizations not yet used into denied ones; another
// subject's, a used one and a pending one stay as they were.
func testDeviceRevokeSubjectDenies(t *testing.T, s store.DeviceStore) {
	ctx := Context(t)
	rs := subjectRevoker(t, s)
	codes := map[string]store.DeviceCode{}
	for _, name := range []string{"alice", "alice-used", "bob", "pending"} {
		d := deviceCode(name)
		wantErr(t, "PutDeviceCode "+name, s.PutDeviceCode(ctx, d), nil)
		if name != "pending" {
			subject := strings.TrimSuffix(name, "-used")
			_, err := s.DecideDeviceCode(ctx, d.UserCodeHash, t0.Add(time.Second), approve(subject))
			wantErr(t, "DecideDeviceCode "+name, err, nil)
		}
		if name == "alice-used" {
			_, err := s.ConsumeDeviceCode(ctx, d.Hash, t0.Add(2*time.Second), store.CodeIssue{FamilyID: "f", AccessTokenID: "at"})
			wantErr(t, "ConsumeDeviceCode", err, nil)
		}
		got, err := s.DeviceCode(ctx, d.Hash)
		wantErr(t, "DeviceCode "+name, err, nil)
		codes[name] = got
	}
	now := t0.Add(time.Minute)
	wantErr(t, "RevokeSubject", rs.RevokeSubject(ctx, "alice", now, now.Add(time.Hour)), nil)
	for name, before := range codes {
		got, err := s.DeviceCode(ctx, before.Hash)
		wantErr(t, "DeviceCode "+name, err, nil)
		want := before
		if name == "alice" {
			want.State, want.DecidedAt = store.DeviceDenied, now
		}
		equal(t, "device code "+name+" after RevokeSubject", normDevice(t, got), normDevice(t, want))
	}
	_, err := s.ConsumeDeviceCode(ctx, codes["alice"].Hash, now.Add(time.Second), store.CodeIssue{FamilyID: "g", AccessTokenID: "at2"})
	if err == nil {
		t.Error("ConsumeDeviceCode of an approval the revocation denied succeeded")
	}
}

// deviceCode is a new pending authorization named name, created at t0,
// expiring 10 minutes later, polled every 5 seconds.
func deviceCode(name string) store.DeviceCode {
	return store.DeviceCode{
		Hash: hash("device " + name), UserCodeHash: hash("user " + name), ClientID: "tv",
		Scopes: []string{"openid", "Service/Market"}, Created: t0, ExpiresAt: t0.Add(10 * time.Minute),
		RetainUntil: t0.Add(time.Hour), Interval: 5 * time.Second, State: store.DevicePending,
	}
}

func normDevice(t *testing.T, d store.DeviceCode) store.DeviceCode {
	t.Helper()
	for _, p := range []*time.Time{&d.Created, &d.ExpiresAt, &d.RetainUntil, &d.LastPolledAt, &d.DecidedAt,
		&d.AuthTime, &d.UsedAt, &d.AccessTokenExpiresAt} {
		*p = utc(t, "device code time", *p)
	}
	return d
}

func approve(subject string) store.DeviceDecision {
	return store.DeviceDecision{Approved: true, Subject: subject, Scopes: []string{"openid"}, AuthTime: t0, SessionID: "sid-1",
		AMR: []string{"pwd", "otp", "mfa"}}
}

func testDevicePutAndRead(t *testing.T, s store.DeviceStore) {
	ctx := Context(t)
	d := deviceCode("a")
	wantErr(t, "PutDeviceCode", s.PutDeviceCode(ctx, d), nil)
	got, err := s.DeviceCode(ctx, d.Hash)
	wantErr(t, "DeviceCode", err, nil)
	equal(t, "DeviceCode", normDevice(t, got), d)
	got, err = s.DeviceCodeByUserCode(ctx, d.UserCodeHash)
	wantErr(t, "DeviceCodeByUserCode", err, nil)
	equal(t, "DeviceCodeByUserCode", normDevice(t, got), d)

	same := deviceCode("b")
	same.Hash = d.Hash
	wantErr(t, "PutDeviceCode same hash", s.PutDeviceCode(ctx, same), store.ErrAlreadyExists)
	same = deviceCode("b")
	same.UserCodeHash = d.UserCodeHash
	wantErr(t, "PutDeviceCode same user code", s.PutDeviceCode(ctx, same), store.ErrAlreadyExists)
	_, err = s.DeviceCode(ctx, hash("none"))
	wantErr(t, "DeviceCode unknown", err, store.ErrNotFound)
	_, err = s.DeviceCodeByUserCode(ctx, hash("none"))
	wantErr(t, "DeviceCodeByUserCode unknown", err, store.ErrNotFound)
}

func testDevicePoll(t *testing.T, s store.DeviceStore) {
	ctx := Context(t)
	d := deviceCode("a")
	wantErr(t, "PutDeviceCode", s.PutDeviceCode(ctx, d), nil)
	got, err := s.PollDeviceCode(ctx, d.Hash, t0.Add(time.Second))
	wantErr(t, "first poll", err, nil)
	equal(t, "first poll LastPolledAt", utc(t, "", got.LastPolledAt), t0.Add(time.Second))
	// 4 s later, the interval (5 s) less its tolerance (a second): on
	// time. It failed when: a poll some milliseconds early was slowed down.
	got, err = s.PollDeviceCode(ctx, d.Hash, t0.Add(5*time.Second))
	wantErr(t, "poll within the tolerance", err, nil)
	equal(t, "Interval after a poll within the tolerance", got.Interval, 5*time.Second)
	// 3.999 s later: too fast; the interval grows by 5 s.
	got, err = s.PollDeviceCode(ctx, d.Hash, t0.Add(8999*time.Millisecond))
	wantErr(t, "fast poll", err, store.ErrSlowDown)
	equal(t, "slowed Interval", got.Interval, 10*time.Second)
	read, _ := s.DeviceCode(ctx, d.Hash)
	equal(t, "slowed Interval read back", read.Interval, 10*time.Second)
	equal(t, "slowed State", read.State, store.DevicePending)
	// 8.999 s after that poll: still too fast at the new interval.
	_, err = s.PollDeviceCode(ctx, d.Hash, t0.Add(17998*time.Millisecond))
	wantErr(t, "poll before the grown interval", err, store.ErrSlowDown)
	// The (grown) interval less its tolerance after the last poll: allowed.
	got, err = s.PollDeviceCode(ctx, d.Hash, t0.Add(31998*time.Millisecond))
	wantErr(t, "poll after the interval", err, nil)
	equal(t, "Interval after two slow downs", got.Interval, 15*time.Second)
	_, err = s.PollDeviceCode(ctx, hash("none"), t0)
	wantErr(t, "poll unknown", err, store.ErrNotFound)

	// Fast polls grow the interval to MaxPollInterval and no further; an
	// interval past it (configured so) does not shrink.
	capped := deviceCode("capped")
	wantErr(t, "PutDeviceCode", s.PutDeviceCode(ctx, capped), nil)
	at := t0.Add(time.Second)
	_, err = s.PollDeviceCode(ctx, capped.Hash, at)
	wantErr(t, "first poll", err, nil)
	lastWritten := at
	for want := capped.Interval + store.SlowDownStep; want <= store.MaxPollInterval+2*store.SlowDownStep; want += store.SlowDownStep {
		at = at.Add(time.Millisecond)
		got, err = s.PollDeviceCode(ctx, capped.Hash, at)
		wantErr(t, "fast poll", err, store.ErrSlowDown)
		equal(t, "Interval after a fast poll", got.Interval, min(want, store.MaxPollInterval))
		if want <= store.MaxPollInterval {
			lastWritten = at // the interval grew: the poll is recorded
		}
		read, err := s.DeviceCode(ctx, capped.Hash)
		wantErr(t, "DeviceCode", err, nil)
		// At the most interval, a fast poll writes nothing.
		equal(t, "LastPolledAt after a fast poll", utc(t, "", read.LastPolledAt), lastWritten)
	}
	long := deviceCode("long")
	long.Interval = store.MaxPollInterval + time.Minute
	wantErr(t, "PutDeviceCode", s.PutDeviceCode(ctx, long), nil)
	_, err = s.PollDeviceCode(ctx, long.Hash, t0.Add(time.Second))
	wantErr(t, "first poll", err, nil)
	got, err = s.PollDeviceCode(ctx, long.Hash, t0.Add(2*time.Second))
	wantErr(t, "fast poll", err, store.ErrSlowDown)
	equal(t, "a long Interval after a fast poll", got.Interval, long.Interval)
}

func testDeviceDecide(t *testing.T, s store.DeviceStore) {
	ctx := Context(t)
	a, b, c := deviceCode("a"), deviceCode("b"), deviceCode("c")
	for _, d := range []store.DeviceCode{a, b, c} {
		wantErr(t, "PutDeviceCode", s.PutDeviceCode(ctx, d), nil)
	}
	now := t0.Add(time.Minute)
	got, err := s.DecideDeviceCode(ctx, a.UserCodeHash, now, approve("alice"))
	wantErr(t, "approve", err, nil)
	want := a
	want.State, want.DecidedAt, want.Subject, want.Scopes, want.AuthTime, want.SessionID, want.AMR =
		store.DeviceApproved, now, "alice", []string{"openid"}, t0, "sid-1", []string{"pwd", "otp", "mfa"}
	equal(t, "approved", normDevice(t, got), want)
	read, _ := s.DeviceCode(ctx, a.Hash)
	equal(t, "approved read back", normDevice(t, read), want)

	_, err = s.DecideDeviceCode(ctx, a.UserCodeHash, now, store.DeviceDecision{Subject: "mallory"})
	wantErr(t, "deny after approve", err, store.ErrDeviceCodeDecided)
	read, _ = s.DeviceCode(ctx, a.Hash)
	equal(t, "unchanged by a second decision", normDevice(t, read), want)

	got, err = s.DecideDeviceCode(ctx, b.UserCodeHash, now, store.DeviceDecision{Subject: "bob"})
	wantErr(t, "deny", err, nil)
	equal(t, "denied State", got.State, store.DeviceDenied)
	equal(t, "denied keeps the requested scopes", got.Scopes, b.Scopes)

	_, err = s.DecideDeviceCode(ctx, c.UserCodeHash, c.ExpiresAt, approve("carol"))
	wantErr(t, "approve at expiry", err, store.ErrDeviceCodeDecided)
	read, _ = s.DeviceCode(ctx, c.Hash)
	equal(t, "expired stays pending", read.State, store.DevicePending)
	_, err = s.DecideDeviceCode(ctx, hash("none"), now, approve("x"))
	wantErr(t, "decide unknown", err, store.ErrNotFound)
}

func testDeviceConsume(t *testing.T, s store.DeviceStore) {
	ctx := Context(t)
	d := deviceCode("a")
	wantErr(t, "PutDeviceCode", s.PutDeviceCode(ctx, d), nil)
	issue := store.CodeIssue{FamilyID: "fam", AccessTokenID: "jti", AccessTokenExpiresAt: t0.Add(time.Hour)}
	_, err := s.ConsumeDeviceCode(ctx, d.Hash, t0, issue)
	wantErr(t, "consume pending", err, store.ErrDeviceCodeNotApproved)
	_, err = s.DecideDeviceCode(ctx, d.UserCodeHash, t0, approve("alice"))
	wantErr(t, "approve", err, nil)
	now := t0.Add(time.Minute)
	got, err := s.ConsumeDeviceCode(ctx, d.Hash, now, issue)
	wantErr(t, "consume approved", err, nil)
	equal(t, "UsedAt", utc(t, "", got.UsedAt), now)
	equal(t, "CodeIssue", normDevice(t, got).CodeIssue, issue)
	got, err = s.ConsumeDeviceCode(ctx, d.Hash, now.Add(time.Second), store.CodeIssue{AccessTokenID: "other"})
	wantErr(t, "consume again", err, store.ErrCodeUsed)
	equal(t, "the first use stays", normDevice(t, got).CodeIssue, issue)
	_, err = s.ConsumeDeviceCode(ctx, hash("none"), now, issue)
	wantErr(t, "consume unknown", err, store.ErrNotFound)

	denied := deviceCode("denied")
	wantErr(t, "PutDeviceCode", s.PutDeviceCode(ctx, denied), nil)
	_, err = s.DecideDeviceCode(ctx, denied.UserCodeHash, t0, store.DeviceDecision{Subject: "bob"})
	wantErr(t, "deny", err, nil)
	_, err = s.ConsumeDeviceCode(ctx, denied.Hash, now, issue)
	wantErr(t, "consume denied", err, store.ErrDeviceCodeNotApproved)
}

func testDeviceDeleteExpired(t *testing.T, s store.DeviceStore) {
	ctx := Context(t)
	a, b := deviceCode("a"), deviceCode("b")
	b.RetainUntil = a.RetainUntil.Add(time.Millisecond)
	wantErr(t, "PutDeviceCode", s.PutDeviceCode(ctx, a), nil)
	wantErr(t, "PutDeviceCode", s.PutDeviceCode(ctx, b), nil)
	n, err := s.DeleteExpiredDeviceCodes(ctx, a.RetainUntil.Add(-time.Millisecond))
	wantErr(t, "DeleteExpiredDeviceCodes before", err, nil)
	equal(t, "removed before retention", n, int64(0))
	n, err = s.DeleteExpiredDeviceCodes(ctx, a.RetainUntil)
	wantErr(t, "DeleteExpiredDeviceCodes at", err, nil)
	equal(t, "removed at retention", n, int64(1))
	_, err = s.DeviceCode(ctx, a.Hash)
	wantErr(t, "removed", err, store.ErrNotFound)
	_, err = s.DeviceCode(ctx, b.Hash)
	wantErr(t, "kept", err, nil)
}

// ConsumeDeviceConcurrently has n goroutines, spread over stores (several
// Stores sharing one database), exchange one approved authorization at
// once: exactly one must win, every other get ErrCodeUsed, and the record
// must carry the winner's tokens. The stores must share an empty database.
func ConsumeDeviceConcurrently(t *testing.T, n int, stores ...store.DeviceStore) {
	ctx := Context(t)
	d := deviceCode("raced")
	wantErr(t, "PutDeviceCode", stores[0].PutDeviceCode(ctx, d), nil)
	_, err := stores[0].DecideDeviceCode(ctx, d.UserCodeHash, t0, approve("alice"))
	wantErr(t, "approve", err, nil)
	errs := concurrently(ctx, t, n, func(i int) error {
		_, err := stores[i%len(stores)].ConsumeDeviceCode(ctx, d.Hash, t0.Add(time.Second),
			store.CodeIssue{AccessTokenID: fmt.Sprintf("jti-%d", i)})
		return err
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("goroutines %d and %d both exchanged the device code", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrCodeUsed):
			t.Errorf("goroutine %d: %v, want %v", i, err, store.ErrCodeUsed)
		}
	}
	if winner < 0 {
		t.Fatal("no goroutine exchanged the device code")
	}
	for i, st := range stores {
		got, err := st.DeviceCode(ctx, d.Hash)
		wantErr(t, "DeviceCode", err, nil)
		equal(t, fmt.Sprintf("store %d: AccessTokenID", i), got.AccessTokenID, fmt.Sprintf("jti-%d", winner))
	}
}

// DecideDeviceConcurrently has n goroutines, spread over stores, approve
// or deny (alternately) one pending authorization at once: exactly one
// decision must be recorded, every other get ErrDeviceCodeDecided, and
// the record must be the winner's.
func DecideDeviceConcurrently(t *testing.T, n int, stores ...store.DeviceStore) {
	ctx := Context(t)
	d := deviceCode("decided")
	wantErr(t, "PutDeviceCode", stores[0].PutDeviceCode(ctx, d), nil)
	errs := concurrently(ctx, t, n, func(i int) error {
		dd := store.DeviceDecision{Approved: i%2 == 0, Subject: fmt.Sprintf("user-%d", i), Scopes: []string{"openid"}}
		_, err := stores[i%len(stores)].DecideDeviceCode(ctx, d.UserCodeHash, t0.Add(time.Second), dd)
		return err
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("goroutines %d and %d both decided", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrDeviceCodeDecided):
			t.Errorf("goroutine %d: %v, want %v", i, err, store.ErrDeviceCodeDecided)
		}
	}
	if winner < 0 {
		t.Fatal("no decision recorded")
	}
	got, err := stores[len(stores)-1].DeviceCode(ctx, d.Hash)
	wantErr(t, "DeviceCode", err, nil)
	wantState := store.DeviceDenied
	if winner%2 == 0 {
		wantState = store.DeviceApproved
	}
	equal(t, "Subject", got.Subject, fmt.Sprintf("user-%d", winner))
	equal(t, "State", got.State, wantState)
}

// testDevicePollRace: many polls at one instant: at most one is allowed,
// the others slow down.
func testDevicePollRace(t *testing.T, s store.DeviceStore) {
	ctx := Context(t)
	d := deviceCode("polled")
	wantErr(t, "PutDeviceCode", s.PutDeviceCode(ctx, d), nil)
	const n = 12
	errs := concurrently(ctx, t, n, func(int) error {
		_, err := s.PollDeviceCode(ctx, d.Hash, t0.Add(time.Second))
		return err
	})
	ok := slices.IndexFunc(errs, func(err error) bool { return err == nil })
	for i, err := range errs {
		if err != nil && !errors.Is(err, store.ErrSlowDown) {
			t.Errorf("poll %d: %v", i, err)
		}
		if err == nil && i != ok {
			t.Errorf("polls %d and %d both allowed at one instant", ok, i)
		}
	}
	got, _ := s.DeviceCode(ctx, d.Hash)
	equal(t, "Interval after the slow downs", got.Interval, d.Interval+time.Duration(n-1)*store.SlowDownStep)
}
