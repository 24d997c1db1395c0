// Package sqliteengine is the embedded query engine of the query service: a
// engine.Engine over one SQLite database file, through modernc.org/sqlite (no cgo). The
// demo serves its query service from it; the PostgreSQL engine serves several instances.
//
// # Connections
//
// Reads and writes use separate connections. Reads run on a pool of read-only
// connections (Config.MaxReadConns, and one more for the catalog), opened with SQLite's
// mode=ro and query_only, and with an authorizer that lets a statement only read
// (readonly.go): even a crafted statement could not write, attach another file or change
// a pragma. The query pool holds the driver's connections itself, not through
// database/sql (readers.go): each keeps its prepared statements, the 256 most recently
// used, and runs one query at a time; one unused for five minutes is closed. Writes (Exec) run on one connection of their own,
// in BEGIN IMMEDIATE transactions, in WAL mode (so reads go on while a write runs) with a
// busy timeout for writers in other processes.
//
// # Time limits and errors
//
// Every statement runs under Config.StatementTimeout, through its context: the driver
// interrupts SQLite when the context ends while a statement starts or waits for a lock,
// and a result stops between two rows. Errors wrap the sentinels of package
// engine (errors.go): SQLITE_CONSTRAINT* is ErrConstraint, the time limit (or the
// caller's deadline) ErrTimeout, the caller's cancellation ErrCanceled, and a database
// that is locked for longer than the busy timeout, cannot be opened, or is closed,
// ErrUnavailable.
//
// # Types
//
// SQLite has no column types, only each column's declared type, from which it derives an
// affinity. The result Type of a column follows SQLite's affinity rules
// (https://www.sqlite.org/datatype3.html#determination_of_column_affinity), applied in
// order to the declared type, case-insensitively:
//
//	contains INT                  -> Integer   (INTEGER affinity)
//	contains CHAR, CLOB or TEXT   -> String    (TEXT affinity)
//	contains BLOB                 -> Binary    (BLOB affinity)
//	contains REAL, FLOA or DOUB   -> Decimal   (REAL affinity)
//	no declared type              -> String    (any value; see below)
//	otherwise (NUMERIC affinity), by name:
//	  contains BOOL               -> Boolean   (BOOLEAN)
//	  contains DATE or TIME       -> DateTime  (DATE, DATETIME, TIMESTAMP, TIME)
//	  anything else               -> Decimal   (DECIMAL(10,2), NUMERIC, MONEY)
//
// So a name never contradicts how SQLite stores the column: "DATETEXT" is a String,
// "POINT" (it contains INT) an Integer, as SQLite itself reads them. A column with no
// declared type (and an expression in a select list) is reported as String: SQLite keeps
// its values as given, and Binary would make clients decode text as base64.
//
// Values come back normalized (rows.go): a Boolean column's 0 and 1 (or 'true' and
// 'false') become bool. A DateTime column's text is parsed by the driver (for a column
// declared exactly DATE, DATETIME or TIMESTAMP; TIME stays text) and returned as a
// time.Time in UTC, written out as RFC 3339; the demo stores ISO 8601 UTC text, "2026-11-21T10:30:00Z", which comes back
// unchanged; text that does not parse stays a string. A Decimal column's values are
// float64 (or int64 for whole numbers): SQLite has no decimal type, a REAL is a double, so
// '37.4800' is stored and returned as 37.48; the result writer prints the shortest decimal
// that reads back as the same double, so a price never gains digits it did not have.
// Bind arguments are normalized the other way: a time.Time is bound as RFC 3339 UTC text
// (the demo's storage format, so comparisons work as text), an engine.Decimal as its
// text (which a numeric column converts), a bool as 1 or 0.
//
// # Catalog
//
// The catalog lists the tables of sqlite_schema (not views, not SQLite's own sqlite_*
// tables) with their columns from pragma table_xinfo, generated columns included. It is
// read at Open and cached; at most once per Config.CatalogCheckInterval a Catalog call
// asks SQLite for PRAGMA schema_version, which every schema change increments, and reads
// the catalog again only when it changed.
//
// This package must not depend on Caddy (caddymodule wires it in); it imports engine,
// sqlgen, internal/contain, the driver (modernc.org/sqlite), zap, and internal/sqlitefile
// (the file and the writer's settings, as the identity store's).
package sqliteengine
