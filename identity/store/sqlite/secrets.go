package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Secret returns the server secret called name, creating it with generate
// when it does not exist yet. The first value stored wins: a caller that
// loses the race gets the winner's value, not its own.
func (s *Store) Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error) {
	var value []byte
	err := s.r.QueryRowContext(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&value)
	switch {
	case err == nil:
		return value, nil
	case !errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("reading secret %q: %w", name, err)
	}

	fresh, err := generate()
	if err != nil {
		return nil, fmt.Errorf("generating secret %q: %w", name, err)
	}
	if len(fresh) == 0 {
		return nil, fmt.Errorf("generating secret %q: generated an empty secret", name)
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO secrets (name, value) VALUES (?, ?)
			ON CONFLICT (name) DO NOTHING`, name, fresh); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&value)
	})
	if err != nil {
		return nil, fmt.Errorf("storing secret %q: %w", name, err)
	}
	return value, nil
}
