package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/identity/store"
)

// insertAuditChange stores the audit change that ctx carries
// (store.WithAuditChange), if any, in tx: the transaction of the change
// it records, whose user is u after it (AuditChange.Fill). A transaction
// run again writes it again, the first attempt having been rolled back.
func insertAuditChange(ctx context.Context, tx pgx.Tx, u store.User) error {
	c := store.AuditChangeOf(ctx)
	if c == nil {
		return nil
	}
	c.Fill(u)
	var ents, scopes []string // NULL when the action does not set them
	if c.SetsEntitlements() {
		ents = textList(c.Entitlements)
	}
	if c.Scopes != nil || c.Action == "scopes" {
		scopes = textList(c.Scopes)
	}
	_, err := tx.Exec(ctx, `INSERT INTO audit_changes (id, made_at, action, username, subject, entitlements, scopes)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
		c.ID, ts(c.Time), c.Action, c.Username, c.Subject, ents, scopes)
	if err != nil {
		return fmt.Errorf("recording the change for the audit: %w", err)
	}
	return nil
}

// PendingAuditChanges reports whether a change waits for an audit run.
func (s *Store) PendingAuditChanges(ctx context.Context) (bool, error) {
	var pending bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM audit_changes)`).Scan(&pending); err != nil {
		return false, fmt.Errorf("reading the pending audit changes: %w", err)
	}
	return pending, nil
}

// ClaimAuditChanges claims up to limit changes that no one holds, or whose
// claim is older than stale, for claimant. The rows are locked as they
// are picked (SKIP LOCKED), so two claimants racing get disjoint changes
// and neither waits for the other.
func (s *Store) ClaimAuditChanges(ctx context.Context, claimant string, now, stale time.Time, limit int) ([]store.AuditChange, error) {
	var (
		out   []store.AuditChange
		order []int64 // each change's seq: the order they were stored in
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		out, order = out[:0], order[:0]
		rows, err := tx.Query(ctx, `UPDATE audit_changes SET claimed_by = $1, claimed_at = $2
			WHERE id IN (SELECT id FROM audit_changes WHERE claimed_at IS NULL OR claimed_at < $3
				ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED)
			RETURNING seq, id, made_at, action, username, subject, entitlements, scopes`,
			claimant, ts(now), ts(stale), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				c    store.AuditChange
				seq  int64
				made time.Time
			)
			if err := rows.Scan(&seq, &c.ID, &made, &c.Action, &c.Username, &c.Subject, &c.Entitlements, &c.Scopes); err != nil {
				return err
			}
			c.Time = made.UTC()
			out, order = append(out, c), append(order, seq)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("claiming audit changes: %w", err)
	}
	return store.InStoredOrder(out, order), nil
}

// DeleteAuditChanges removes the changes with these IDs.
func (s *Store) DeleteAuditChanges(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM audit_changes WHERE id = ANY($1)`, ids); err != nil {
		return fmt.Errorf("deleting audit changes: %w", err)
	}
	return nil
}
