package sqlgen

import (
	"errors"
	"strconv"
)

// UnknownError is a table or column that the catalog does not have. A handler answers it
// with 404.
type UnknownError struct {
	Kind  string // "table" or "column"
	Name  string // the name as the statement wrote it
	Table string // for a column: the table, as the catalog spells it
}

func (e *UnknownError) Error() string {
	if e.Kind == "column" {
		return "unknown column " + strconv.Quote(e.Name) + " in table " + strconv.Quote(e.Table)
	}
	return "unknown " + e.Kind + " " + strconv.Quote(e.Name)
}

// StatementError is a statement that names only known tables and columns but still cannot
// be generated because of what the client asked: LIKE on a number column, a column named
// twice, a write of the owner column, too many values. A handler answers it with 400 (or
// 413 when Err is iql.ErrTooLarge).
type StatementError struct {
	Msg string
	Err error // iql.ErrTooLarge for too many bind arguments, ErrOwnerUnusable, else nil
}

// ErrOwnerUnusable is the Err of a StatementError for an owner the owner
// column cannot hold as it is spelled (a uuid column, a subject that is not
// a uuid as PostgreSQL prints one): the caller can read or write none of the
// table's rows, whatever the statement.
var ErrOwnerUnusable = errors.New("sqlgen: the caller cannot own rows of the table")

func (e *StatementError) Error() string { return e.Msg }

// Unwrap returns Err.
func (e *StatementError) Unwrap() error { return e.Err }
