package sqliteengine

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"

	"modernc.org/sqlite"
)

// Reads are kept read-only by three guards:
//
//  1. SQLite opens the file read-only (mode=ro in readerDSN): any write to the database
//     fails with SQLITE_READONLY, whatever the statement.
//  2. PRAGMA query_only is on (readerDSN): the same, once more.
//  3. An authorizer (readOnlyAuthorizer), installed on each reader connection as it opens,
//     refuses at prepare time every action but reading: INSERT, UPDATE, DELETE and DDL,
//     but also what the first two let through, because it writes no database file:
//     ATTACH (which opens, and creates, another file: another database could be read),
//     CREATE TEMP TABLE, PRAGMA (query_only could be turned off), SAVEPOINT. The
//     statements the engine reads its catalog with are allowed by name.
//
// Each of the first two alone keeps the database file from being written; the third alone
// does too, and keeps a statement to reading the main database.

// readOnlyConnector opens reader connections with readOnlyAuthorizer installed.
type readOnlyConnector struct{ driver.Connector }

func (c readOnlyConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	a, ok := conn.(sqlite.AuthorizerRegisterer)
	if !ok {
		conn.Close()
		return nil, errors.New("the sqlite driver offers no authorizer")
	}
	if err := a.RegisterAuthorizer(readOnlyAuthorizer); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// readOnlyAuthorizer allows what a SELECT needs, and the read-only pragmas the catalog is
// read with; it denies everything else.
func readOnlyAuthorizer(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthFunction, sqlite.AuthRecursive:
		return sqlite.AuthorizerOK
	case sqlite.AuthTransaction:
		// BEGIN, COMMIT, ROLLBACK: a read transaction (the catalog is read in one).
		return sqlite.AuthorizerOK
	case sqlite.AuthPragma:
		// arg1 is the pragma, arg2 its argument. Only reads: schema_version with no
		// argument (with one it would set it), table_xinfo of a table.
		switch {
		case strings.EqualFold(arg1, "schema_version") && arg2 == "", strings.EqualFold(arg1, "table_xinfo"):
			return sqlite.AuthorizerOK
		}
	}
	return sqlite.AuthorizerDeny
}
