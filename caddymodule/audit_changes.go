package caddymodule

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/identity/store"
)

// Changes of users made with the CLI (gatehouse user add, passwd,
// disable, enable, delete, scopes, entitle, unentitle, and mfa reset and
// mfa recovery-codes) are made where no
// audit run writes: the CLI stores each as a pending change in the
// change's own transaction (store.WithAuditChange), and the audit run of
// whichever instance claims it first writes it into its chain, then
// deletes it. An instance that dies between the two leaves its claim,
// which goes stale after changeClaimStale and is claimed again: a change
// may be written twice (the records share its change_id), never not at
// all.
const (
	// changePoll is how often an audit run looks for pending changes: a
	// read of the store, and the delay before a change is in a chain.
	changePoll = time.Second
	// changeClaimStale is how long a claim holds a change.
	changeClaimStale = time.Minute
	// changeBatch bounds the changes claimed at once.
	changeBatch = 100
)

// The attributes of the change records.
const (
	attrAction    = "action"     // what was done (store.AuditChange.Action)
	attrChangeID  = "change_id"  // the change's id, shared by the records of one change
	attrChangedAt = "changed_at" // when the change was made (RFC 3339, UTC)
	attrBy        = "by"         // who made it: "cli"
	attrScopes    = "scopes"     // a scopes change: the user's scopes after it
)

// changeDrainer is an audit run's loop over the pending changes.
type changeDrainer struct {
	st       store.Audit
	claimant string // the instance and run
	now      func() time.Time
}

// run drains the pending changes every changePoll until ctx ends.
func (d *changeDrainer) run(ctx context.Context, w *audit.Writer, log *zap.Logger) {
	t := time.NewTicker(changePoll)
	defer t.Stop()
	for {
		d.drain(ctx, w, log)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// drain writes the changes pending now into w's chain, a batch at a time,
// and deletes those written. A change the chain did not take (its sink
// failing) stays claimed, and is claimed again once its claim is stale.
func (d *changeDrainer) drain(ctx context.Context, w *audit.Writer, log *zap.Logger) {
	for range 10 { // at most 10 batches a tick: a backlog does not hold the loop
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		pending, err := d.st.PendingAuditChanges(sctx)
		if err != nil || !pending {
			cancel()
			if err != nil && ctx.Err() == nil {
				log.Warn("reading the pending changes for the audit", zap.Error(err))
			}
			return
		}
		now := d.now()
		changes, err := d.st.ClaimAuditChanges(sctx, d.claimant, now, now.Add(-changeClaimStale), changeBatch)
		if err != nil {
			cancel()
			log.Warn("claiming the pending changes for the audit", zap.Error(err))
			return
		}
		var written []string
		for _, c := range changes {
			if err := appendChange(w, c); err != nil {
				log.Error("writing a change into the audit chain", zap.Error(err), zap.String("change_id", c.ID))
				break
			}
			written = append(written, c.ID)
		}
		// Under a flush delay the records are queued: a change leaves the
		// store only once they are in the log.
		if err := w.Flush(); err != nil {
			written = nil
			log.Error("writing changes into the audit chain", zap.Error(err))
		}
		err = d.st.DeleteAuditChanges(sctx, written)
		cancel()
		if err != nil {
			// Written, and claimed again once stale: a second copy of
			// each, with the same change_id.
			log.Warn("deleting the changes written into the audit chain", zap.Error(err), zap.Int("changes", len(written)))
			return
		}
		if len(written) < changeBatch {
			return
		}
	}
}

// appendChange writes c as a user_change record and, when its action sets
// the user's entitlements, an entitlement_change record with the whole
// set after it: what the usage report reads.
func appendChange(w *audit.Writer, c store.AuditChange) error {
	common := []audit.Attr{
		audit.String(audit.AttrSubject, c.Subject),
		audit.String(audit.AttrUsername, c.Username),
		audit.String(attrAction, c.Action),
		audit.String(attrChangeID, c.ID),
		audit.String(attrChangedAt, c.Time.UTC().Format(time.RFC3339Nano)),
		audit.String(attrBy, "cli"),
	}
	attrs := common
	if c.Scopes != nil {
		attrs = append(attrs[:len(attrs):len(attrs)], audit.Strings(attrScopes, c.Scopes...))
	}
	if err := w.Append(audit.KindUserChange, attrs...); err != nil {
		return err
	}
	if !c.SetsEntitlements() {
		return nil
	}
	return w.Append(audit.KindEntitlementChange,
		append(common[:len(common):len(common)], audit.Strings(audit.AttrEntitlements, c.Entitlements...))...)
}
