package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gatehouse/gatehouse/identity/store"
)

// AddAuditKey stores a new audit key. ErrAlreadyExists if its ID is taken.
func (s *Store) AddAuditKey(ctx context.Context, k store.AuditKey) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO audit_keys
		(id, algorithm, public, private, created_at, sign_from, retire_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		k.ID, k.Algorithm, k.Public, k.Private, ts(k.Created), ts(k.SignFrom), ts(k.RetireAt))
	if isUnique(err) {
		return fmt.Errorf("adding audit key %q: %w", k.ID, store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("adding audit key %q: %w", k.ID, err)
	}
	return nil
}

// AuditKeys lists every audit key, oldest first.
func (s *Store) AuditKeys(ctx context.Context) ([]store.AuditKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, algorithm, public, private, created_at, sign_from, retire_at
		FROM audit_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("listing audit keys: %w", err)
	}
	defer rows.Close()
	var keys []store.AuditKey
	for rows.Next() {
		var (
			k                           store.AuditKey
			created, signFrom, retireAt pgtype.Timestamptz
		)
		if err := rows.Scan(&k.ID, &k.Algorithm, &k.Public, &k.Private, &created, &signFrom, &retireAt); err != nil {
			return nil, fmt.Errorf("listing audit keys: %w", err)
		}
		k.Created, k.SignFrom, k.RetireAt = fromTS(created), fromTS(signFrom), fromTS(retireAt)
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing audit keys: %w", err)
	}
	return keys, nil
}

// RetireAuditKey sets the time the audit key id stops signing.
// ErrNotFound if there is none.
func (s *Store) RetireAuditKey(ctx context.Context, id string, retireAt time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE audit_keys SET retire_at = $1 WHERE id = $2`, ts(retireAt), id)
	if err == nil {
		err = oneRow(tag)
	}
	if err != nil {
		return fmt.Errorf("retiring audit key %q: %w", id, err)
	}
	return nil
}

// AddAuditCheckpoint stores a checkpoint. ErrAlreadyExists if its
// instance, run and seq are taken.
func (s *Store) AddAuditCheckpoint(ctx context.Context, c store.AuditCheckpoint) error {
	if c.Seq > math.MaxInt64 {
		return fmt.Errorf("adding audit checkpoint: seq %d out of range", c.Seq)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO audit_checkpoints
		(instance, run, seq, hash, at, key_id, final, jws) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		c.Instance, c.Run, int64(c.Seq), c.Hash, ms(c.Time), c.KeyID, c.Final, c.JWS)
	if isUnique(err) {
		return fmt.Errorf("adding audit checkpoint %d of run %q: %w", c.Seq, c.Run, store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("adding audit checkpoint %d of run %q: %w", c.Seq, c.Run, err)
	}
	return nil
}

const checkpointColumns = `instance, run, seq, hash, at, key_id, final, jws`

// LastAuditCheckpoint returns the checkpoint of instance stored last.
// ErrNotFound if there is none.
func (s *Store) LastAuditCheckpoint(ctx context.Context, instance string) (store.AuditCheckpoint, error) {
	row := s.pool.QueryRow(ctx, `SELECT `+checkpointColumns+` FROM audit_checkpoints
		WHERE instance = $1 ORDER BY id DESC LIMIT 1`, instance)
	c, err := scanCheckpoint(row)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.AuditCheckpoint{}, fmt.Errorf("reading the last audit checkpoint of %q: %w", instance, err)
	}
	return c, nil
}

// AuditCheckpoints lists every checkpoint in the order they were stored.
func (s *Store) AuditCheckpoints(ctx context.Context) ([]store.AuditCheckpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+checkpointColumns+` FROM audit_checkpoints ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("listing audit checkpoints: %w", err)
	}
	defer rows.Close()
	var out []store.AuditCheckpoint
	for rows.Next() {
		c, err := scanCheckpoint(rows)
		if err != nil {
			return nil, fmt.Errorf("listing audit checkpoints: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing audit checkpoints: %w", err)
	}
	return out, nil
}

func scanCheckpoint(row pgx.Row) (store.AuditCheckpoint, error) {
	var (
		c   store.AuditCheckpoint
		seq int64
		at  time.Time
	)
	if err := row.Scan(&c.Instance, &c.Run, &seq, &c.Hash, &at, &c.KeyID, &c.Final, &c.JWS); err != nil {
		return store.AuditCheckpoint{}, err
	}
	c.Seq, c.Time = uint64(seq), at.UTC()
	return c, nil
}
