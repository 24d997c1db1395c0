package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/gatehouse/gatehouse/identity/store"
)

// AddSigningKey stores a new signing key. ErrAlreadyExists if its ID is taken.
func (s *Store) AddSigningKey(ctx context.Context, k store.SigningKey) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO signing_keys
		(id, algorithm, private, created_at, sign_from, retire_at, remove_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.Algorithm, k.Private, millis(k.Created), millis(k.SignFrom), millis(k.RetireAt), millis(k.RemoveAt))
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
	rows, err := s.r.QueryContext(ctx, `SELECT id, algorithm, private, created_at, sign_from, retire_at, remove_at
		FROM signing_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("listing signing keys: %w", err)
	}
	defer rows.Close()
	var keys []store.SigningKey
	for rows.Next() {
		var (
			k                                     store.SigningKey
			created, signFrom, retireAt, removeAt sql.NullInt64
		)
		if err := rows.Scan(&k.ID, &k.Algorithm, &k.Private, &created, &signFrom, &retireAt, &removeAt); err != nil {
			return nil, fmt.Errorf("listing signing keys: %w", err)
		}
		k.Created, k.SignFrom = fromMillis(created), fromMillis(signFrom)
		k.RetireAt, k.RemoveAt = fromMillis(retireAt), fromMillis(removeAt)
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
	res, err := s.w.ExecContext(ctx, `UPDATE signing_keys SET sign_from = ?, retire_at = ?, remove_at = ?
		WHERE id = ?`, millis(k.SignFrom), millis(k.RetireAt), millis(k.RemoveAt), k.ID)
	if err != nil {
		return fmt.Errorf("updating signing key %q: %w", k.ID, err)
	}
	if err := oneRow(res); err != nil {
		return fmt.Errorf("updating signing key %q: %w", k.ID, err)
	}
	return nil
}

// DeleteSigningKey removes a key. ErrNotFound if there is none.
func (s *Store) DeleteSigningKey(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM signing_keys WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("deleting signing key %q: %w", id, err)
	}
	if err := oneRow(res); err != nil {
		return fmt.Errorf("deleting signing key %q: %w", id, err)
	}
	return nil
}
