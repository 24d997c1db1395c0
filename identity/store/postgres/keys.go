package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gatehouse/gatehouse/identity/store"
)

// AddSigningKey stores a new signing key. ErrAlreadyExists if its ID is taken.
func (s *Store) AddSigningKey(ctx context.Context, k store.SigningKey) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO signing_keys
		(id, algorithm, private, created_at, sign_from, retire_at, remove_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		k.ID, k.Algorithm, k.Private, ts(k.Created), ts(k.SignFrom), ts(k.RetireAt), ts(k.RemoveAt))
	if isUnique(err) {
		return fmt.Errorf("adding signing key %q: %w", k.ID, store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("adding signing key %q: %w", k.ID, err)
	}
	return nil
}

// SigningKeys lists every stored signing key, oldest first.
func (s *Store) SigningKeys(ctx context.Context) ([]store.SigningKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, algorithm, private, created_at, sign_from, retire_at, remove_at
		FROM signing_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("listing signing keys: %w", err)
	}
	defer rows.Close()
	var keys []store.SigningKey
	for rows.Next() {
		var (
			k                                     store.SigningKey
			created, signFrom, retireAt, removeAt pgtype.Timestamptz
		)
		if err := rows.Scan(&k.ID, &k.Algorithm, &k.Private, &created, &signFrom, &retireAt, &removeAt); err != nil {
			return nil, fmt.Errorf("listing signing keys: %w", err)
		}
		k.Created, k.SignFrom = fromTS(created), fromTS(signFrom)
		k.RetireAt, k.RemoveAt = fromTS(retireAt), fromTS(removeAt)
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing signing keys: %w", err)
	}
	return keys, nil
}

// UpdateSigningKey replaces the schedule of the key with k.ID: SignFrom,
// RetireAt and RemoveAt. The other fields of k are ignored. ErrNotFound if
// there is no such key.
func (s *Store) UpdateSigningKey(ctx context.Context, k store.SigningKey) error {
	tag, err := s.pool.Exec(ctx, `UPDATE signing_keys SET sign_from = $1, retire_at = $2, remove_at = $3
		WHERE id = $4`, ts(k.SignFrom), ts(k.RetireAt), ts(k.RemoveAt), k.ID)
	if err == nil {
		err = oneRow(tag)
	}
	if err != nil {
		return fmt.Errorf("updating signing key %q: %w", k.ID, err)
	}
	return nil
}

// DeleteSigningKey removes a key. ErrNotFound if there is none.
func (s *Store) DeleteSigningKey(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM signing_keys WHERE id = $1`, id)
	if err == nil {
		err = oneRow(tag)
	}
	if err != nil {
		return fmt.Errorf("deleting signing key %q: %w", id, err)
	}
	return nil
}

// oneRow returns nil if the statement changed a row, store.ErrNotFound if
// it changed none.
func oneRow(tag pgconn.CommandTag) error {
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}
