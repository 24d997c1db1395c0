// Package sqlitefile opens an SQLite database file the way both of the module's SQLite
// users do, the identity store (identity/store/sqlite) and the query service's engine
// (queryproxy/sqliteengine): the file and its directory created private, file: URIs, and
// one writer connection in WAL mode, opened with a retry while another process switches
// the same new file to WAL. The readers' settings are each user's own.
//
// It imports the standard library and the driver (modernc.org/sqlite), and nothing of
// the module.
package sqlitefile

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Create creates the database file at path with mode 0600, and its directory with 0700,
// when they do not exist yet. SQLite gives the -wal and -shm files the mode of the
// database file. An existing file keeps its mode.
func Create(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// URI is a file: URI for the absolute path abs with the parameters q, so that a '?' or '#'
// in the path is not read as a query; the driver reads the underscore parameters, SQLite
// the others (mode).
func URI(abs string, q url.Values) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter: file:///C:/...
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}
	return u.String()
}

// WriterDSN is the driver's name for the writer connection of the database at the
// absolute path abs: WAL (a property of the file: the writer sets it, readers find it),
// BEGIN IMMEDIATE transactions, foreign keys enforced, a busy timeout of busy (whole
// milliseconds), and synchronous ("FULL" or "NORMAL"), set rather than left to the
// build's default: only the writer commits.
func WriterDSN(abs string, busy time.Duration, synchronous string) string {
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(busy.Milliseconds(), 10))
	q.Set("_foreign_keys", "1")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", synchronous)
	q.Set("_txlock", "immediate")
	return URI(abs, q)
}

// ConnectWriter opens the writer's connection, which switches a new file to WAL. Two
// processes doing that to one new file at once can meet SQLITE_BUSY without SQLite's busy
// handler ever waiting (it would deadlock), so the connection is tried again, for up to
// busyTimeout.
func ConnectWriter(ctx context.Context, w *sql.DB, busyTimeout time.Duration) error {
	deadline := time.Now().Add(busyTimeout)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := w.PingContext(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (any of its extended codes).
func isBusy(err error) bool {
	e, ok := errors.AsType[*sqlite.Error](err)
	return ok && e.Code()&0xff == sqlite3.SQLITE_BUSY
}
