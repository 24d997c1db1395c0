package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Secret returns the server secret called name, creating it with generate
// when it does not exist yet. The first value stored wins: a caller that
// loses the race gets the winner's value, not its own.
func (s *Store) Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error) {
	var value []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&value)
	switch {
	case err == nil:
		return value, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("reading secret %q: %w", name, err)
	}

	fresh, err := generate()
	if err != nil {
		return nil, fmt.Errorf("generating secret %q: %w", name, err)
	}
	if len(fresh) == 0 {
		return nil, fmt.Errorf("generating secret %q: generated an empty secret", name)
	}
	// An insert that meets a concurrent one waits for it to commit and
	// then does nothing; the SELECT after it, a statement of its own, sees
	// the row that won. (One statement could not: its snapshot predates
	// the winner's commit.)
	err = s.pool.QueryRow(ctx, `INSERT INTO secrets (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO NOTHING RETURNING value`, name, fresh).Scan(&value)
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.pool.QueryRow(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&value)
	}
	if err != nil {
		return nil, fmt.Errorf("storing secret %q: %w", name, err)
	}
	return value, nil
}
