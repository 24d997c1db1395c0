package verify_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// noticeBound bounds how long a notice takes to apply; the poll of these
// tests (an hour) never runs within it.
const noticeBound = 5 * time.Second

// notifying is a revocation lister that is also a store.RevocationNotifier,
// its notices sent by the test.
type notifying struct {
	*revocations
	notices chan struct{}
}

func (n notifying) RevocationNotices(context.Context) <-chan struct{} { return n.notices }

var _ store.RevocationNotifier = notifying{}

// runFixture is a fixture whose verifier polls once an hour and runs until
// the test ends; with notices, its lister sends them.
func runFixture(t *testing.T, notices chan struct{}) *fixture {
	t.Helper()
	f := newFixture(t, func(c *verify.Config) {
		c.RevocationRefresh = time.Hour
		if notices != nil {
			c.Revocations = notifying{revocations: c.Revocations.(*revocations), notices: notices}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.v.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

// revokedWithin reports whether token is refused as revoked within d.
func revokedWithin(t *testing.T, f *fixture, token string, d time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, err := f.v.Verify(t.Context(), token); reasonOf(err) == verify.ReasonRevoked {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRevocationNoticeApplies: a notice from the store makes Run read the
// revocations at once, so a revocation made elsewhere refuses a cached
// token long before the next poll; without the notice it would not.
func TestRevocationNoticeApplies(t *testing.T) {
	notices := make(chan struct{}, 1)
	f := runFixture(t, notices)
	token := f.issuer.Token("alice", "x")
	if _, err := f.v.Verify(t.Context(), token); err != nil { // now cached
		t.Fatal(err)
	}
	f.revs.revoke("jti-alice-x")
	if revokedWithin(t, f, token, 300*time.Millisecond) {
		t.Fatal("revoked before any notice: the test cannot tell the notice's effect")
	}
	notices <- struct{}{}
	if !revokedWithin(t, f, token, noticeBound) {
		t.Fatalf("the token is still accepted %v after the notice", noticeBound)
	}
	if n := f.v.Stats().RevocationNotices; n != 1 {
		t.Errorf("RevocationNotices = %d, want 1", n)
	}
}

// TestRevocationNoticesClosed: when the store closes its notice channel,
// Run goes on polling, without spinning on the closed channel.
func TestRevocationNoticesClosed(t *testing.T) {
	notices := make(chan struct{})
	f := runFixture(t, notices)
	close(notices)
	time.Sleep(200 * time.Millisecond)
	if full, since := f.revs.reads(); full+since > 2 {
		t.Fatalf("%d reads in 200ms after the notices closed, want none beyond New's", full+since)
	}
}

// TestRevocationsChanged: the channel closes when a read brings a
// revocation not yet applied (by RefreshRevocations, by a notice), not
// when it brings nothing new (the overlap reads the last minute's again),
// and a new channel waits for the next change.
func TestRevocationsChanged(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	changed := f.v.RevocationsChanged()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	if err := f.v.RefreshRevocations(ctx); err != nil || closed(changed) {
		t.Fatalf("a read with nothing revoked: %v, closed %v", err, closed(changed))
	}
	f.revs.revoke("jti-1")
	if err := f.v.RefreshRevocations(ctx); err != nil || !closed(changed) {
		t.Fatalf("a read of a new revocation: %v, closed %v, want closed", err, closed(changed))
	}
	next := f.v.RevocationsChanged()
	if closed(next) {
		t.Fatal("the channel after a change is closed already")
	}
	if err := f.v.RefreshRevocations(ctx); err != nil || closed(next) {
		t.Fatalf("a read bringing the same revocation again (overlap): %v, closed %v, want open", err, closed(next))
	}
	f.revs.add(store.Revocation{Subject: "bob", NotBefore: f.now, ExpiresAt: f.now.Add(time.Hour)})
	if err := f.v.RefreshRevocations(ctx); err != nil || !closed(next) {
		t.Fatalf("a read of a subject's revocation: %v, closed %v, want closed", err, closed(next))
	}
}
