package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// insertAuditChange stores the audit change that ctx carries
// (store.WithAuditChange), if any, in tx: the transaction of the change
// it records, whose user is u after it (AuditChange.Fill).
func insertAuditChange(ctx context.Context, tx *sql.Tx, u store.User) error {
	c := store.AuditChangeOf(ctx)
	if c == nil {
		return nil
	}
	c.Fill(u)
	var ents, scopes sql.NullString
	if c.SetsEntitlements() {
		ents = sql.NullString{String: encodeList(c.Entitlements), Valid: true}
	}
	if c.Scopes != nil || c.Action == "scopes" {
		scopes = sql.NullString{String: encodeList(c.Scopes), Valid: true}
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO audit_changes (id, made_at, action, username, subject, entitlements, scopes)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		c.ID, millis(c.Time), c.Action, c.Username, c.Subject, ents, scopes)
	if err != nil {
		return fmt.Errorf("recording the change for the audit: %w", err)
	}
	return nil
}

// PendingAuditChanges reports whether a change waits for an audit run.
func (s *Store) PendingAuditChanges(ctx context.Context) (bool, error) {
	var pending bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM audit_changes)`).Scan(&pending); err != nil {
		return false, fmt.Errorf("reading the pending audit changes: %w", err)
	}
	return pending, nil
}

// ClaimAuditChanges claims up to limit changes that no one holds, or whose
// claim is older than stale, for claimant, in one write transaction:
// writes are serialized, so two claimants never get the same change.
func (s *Store) ClaimAuditChanges(ctx context.Context, claimant string, now, stale time.Time, limit int) ([]store.AuditChange, error) {
	var (
		out   []store.AuditChange
		order []int64 // each change's rowid: the order they were stored in
	)
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		out, order = out[:0], order[:0]
		rows, err := tx.QueryContext(ctx, `UPDATE audit_changes SET claimed_by = ?, claimed_at = ?
			WHERE id IN (SELECT id FROM audit_changes WHERE claimed_at IS NULL OR claimed_at < ?
				ORDER BY rowid LIMIT ?)
			RETURNING rowid, id, made_at, action, username, subject, entitlements, scopes`,
			claimant, millis(now), millis(stale), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				c            store.AuditChange
				rowid, made  int64
				ents, scopes sql.NullString
			)
			if err := rows.Scan(&rowid, &c.ID, &made, &c.Action, &c.Username, &c.Subject, &ents, &scopes); err != nil {
				return err
			}
			c.Time = time.UnixMilli(made).UTC()
			if ents.Valid {
				if c.Entitlements, err = decodeList(ents.String); err != nil {
					return err
				}
				c.Entitlements = nonNil(c.Entitlements)
			}
			if scopes.Valid {
				if c.Scopes, err = decodeList(scopes.String); err != nil {
					return err
				}
				c.Scopes = nonNil(c.Scopes)
			}
			out, order = append(out, c), append(order, rowid)
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
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM audit_changes WHERE id IN (SELECT value FROM json_each(?))`, encodeList(ids))
		return err
	})
	if err != nil {
		return fmt.Errorf("deleting audit changes: %w", err)
	}
	return nil
}

// nonNil is l, or an empty list for nil: a change that sets a list sets
// it to something, empty or not.
func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
