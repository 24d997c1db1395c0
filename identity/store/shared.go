package store

import (
	"context"
	"time"
)

// What a backend shared by several instances may offer beyond Store. Both
// are optional: a caller finds them with a type assertion on the Store,
// and does without (polling, the plain grace window) when they are absent.

// RevocationNotifier is implemented by a backend that can tell every
// instance sharing it, as it happens, that a revocation was written (the
// PostgreSQL backend, with LISTEN/NOTIFY). A verifier whose
// RevocationLister implements it re-reads its revocations on each notice,
// besides its periodic poll. Notices can be lost (a connection drops, a
// notice coalesces with another): the poll stays, and a notice is only a
// reason to read sooner.
type RevocationNotifier interface {
	// RevocationNotices returns a channel that receives a value soon after
	// a revocation (RevokeAccessToken, RevokeRefreshFamily, RevokeSubject)
	// is committed by any instance sharing the database, this one
	// included, and after the notifier connects again following a loss
	// of its connection (notices sent meanwhile are lost). Values
	// coalesce: one may stand for several revocations. The channel is
	// closed once ctx ends. A nil channel (which never receives) means
	// the backend sends no notices, as when they are turned off.
	RevocationNotices(ctx context.Context) <-chan struct{}
}

// Outages is implemented by a backend that records when this process
// found its database unreachable (every operation failed with
// ErrUnavailable until the next one succeeded). The refresh grant uses
// it so that an outage does not use up a grace window: a refresh whose
// answer was lost when the database went away (its commit outcome
// unknown) can be sent again once it is back, however long it was away.
type Outages interface {
	// Unavailable returns how much of the time from from to to this
	// process found the database unreachable, by its system clock.
	Unavailable(from, to time.Time) time.Duration
}
