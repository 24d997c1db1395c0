package postgres

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// ms is t truncated to a whole millisecond (towards the past, as Unix
// milliseconds are), in UTC: the precision the store keeps.
func ms(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

// ts binds t as a timestamptz of millisecond precision, or NULL for the
// zero time.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return ms(t)
}

// fromTS is the UTC time of a scanned timestamptz, or the zero time for
// NULL.
func fromTS(v pgtype.Timestamptz) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return v.Time.UTC()
}

// blob binds b as a bytea, or NULL when it is empty.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// nonEmpty is b, or nil when it is empty.
func nonEmpty[T any](b []T) []T {
	if len(b) == 0 {
		return nil
	}
	return b
}

// textList binds l as a text[] ("{}" for none: the columns are NOT NULL).
func textList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
