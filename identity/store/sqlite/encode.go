package sqlite

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gatehouse/gatehouse/identity/store"
)

// millis is t as Unix milliseconds, or NULL for the zero time.
func millis(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

// fromMillis is the UTC time of Unix milliseconds n, or the zero time for NULL.
func fromMillis(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMilli(n.Int64).UTC()
}

// blob binds b as a BLOB, or NULL when it is empty.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// encodeList is a list of strings as a JSON array ("[]" for none).
func encodeList(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	b, err := json.Marshal(l)
	if err != nil {
		panic(err) // a []string always marshals
	}
	return string(b)
}

// decodeList reads a JSON array of strings; an empty array is nil.
func decodeList(s string) ([]string, error) {
	var l []string
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return nil, fmt.Errorf("decoding list: %w", err)
	}
	if len(l) == 0 {
		return nil, nil
	}
	return l, nil
}

// isUnique reports whether err is the violation of a primary key or a
// unique constraint.
func isUnique(err error) bool {
	e, ok := errors.AsType[*sqlite.Error](err)
	if !ok {
		return false
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return true
	}
	return false
}

// oneRow returns nil if the statement changed a row, store.ErrNotFound if
// it changed none.
func oneRow(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("counting changed rows: %w", err)
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}
