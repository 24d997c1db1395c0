package caddymodule

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

// The daily snapshot of entitlements: what a usage report's "days
// entitled" starts from. The app records, at the end of each Provision
// (a start or a reload: after the users file has created its users), and
// its audit run at each UTC midnight, one entitlement_snapshot record per user of the store
// and per client of the configuration loaded last that holds pairs
// (client_credentials clients), with the pairs in their text form (none
// for a user who holds none, so that the report knows the user exists).
// Changes between two snapshots are the entitlement_change records.

// snapshotPrincipal names what a snapshot record is of.
const (
	attrPrincipal   = "principal" // "user" or "client"
	principalUser   = "user"
	principalClient = "client"
)

// clientPairs are a configuration's clients that hold pairs, by id.
type clientPairs map[string]entitle.Set

// snapshotter is an audit run's snapshot loop's state: the clients of
// the configuration loaded last (a reload replaces them).
type snapshotter struct {
	st      store.Users
	clients atomic.Pointer[clientPairs]
	now     func() time.Time
}

// run records a snapshot at each UTC midnight until ctx ends. Started
// through contain.Loop.
func (s *snapshotter) run(ctx context.Context, w *audit.Writer, log *zap.Logger) {
	for {
		now := s.now().UTC()
		next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
		t := time.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		s.snapshot(ctx, w, log)
	}
}

// snapshot appends one record per user and per client holding pairs. A
// store that cannot list its users is logged: the next snapshot, or the
// run's next start, tries again.
func (s *snapshotter) snapshot(ctx context.Context, w *audit.Writer, log *zap.Logger) {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	users, err := s.st.Users(lctx)
	cancel()
	if err != nil {
		log.Error("listing users for the entitlement snapshot", zap.Error(err))
	}
	for _, u := range users {
		if err := w.Append(audit.KindEntitlementSnapshot, audit.String(attrPrincipal, principalUser),
			audit.String(audit.AttrSubject, u.Subject), audit.String(audit.AttrUsername, u.Username),
			audit.Strings(audit.AttrEntitlements, u.Entitlements.Strings()...)); err != nil {
			return // counted and logged by the writer
		}
	}
	if c := s.clients.Load(); c != nil {
		ids := make([]string, 0, len(*c))
		for id := range *c {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if err := w.Append(audit.KindEntitlementSnapshot, audit.String(attrPrincipal, principalClient),
				audit.String(audit.AttrSubject, id), audit.String(audit.AttrClient, id),
				audit.Strings(audit.AttrEntitlements, (*c)[id].Strings()...)); err != nil {
				return
			}
		}
	}
}

// clientPairs are the app's clients that hold pairs (their config was
// validated: a pair that does not parse is left out).
func (a *App) clientPairs() clientPairs {
	out := clientPairs{}
	for _, c := range a.Clients {
		if len(c.Entitlements) == 0 {
			continue
		}
		if set, err := entitle.Parse(c.Entitlements...); err == nil {
			out[c.ID] = set
		}
	}
	return out
}
