package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"

	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/internal/sqlitefile"
)

// Defaults of the options.
const (
	// DefaultBusyTimeout is how long a statement waits for a lock held by
	// another process before it fails.
	DefaultBusyTimeout = 10 * time.Second
	// minReadConns is the smallest default size of the reader pool.
	minReadConns = 4
)

// Store is a store.Store kept in one SQLite database file. It is safe for
// concurrent use, and several Stores (in one process or in several) may share
// the same file.
type Store struct {
	path string
	w    *sql.DB  // the writer: one connection, BEGIN IMMEDIATE transactions
	r    *sql.DB  // the readers: several read-only connections
	q    prepared // the hot statements, prepared on w and r

	// The writer goroutine (see write): it takes the writes from writes
	// until stopWriter is closed, then closes writerDone.
	writes     chan *writeReq
	stopWriter chan struct{}
	writerDone chan struct{}
	stopOnce   sync.Once
}

// Option changes how Open opens the database.
type Option func(*options)

type options struct {
	busyTimeout time.Duration
	readConns   int
	synchronous string
}

// WithBusyTimeout sets how long a statement waits for a lock that another
// process holds before it fails. Default DefaultBusyTimeout (10 s); it is
// rounded down to whole milliseconds and must be at least 1 ms. A short
// timeout risks "database is locked" errors when another process writes.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.busyTimeout = d }
}

// WithReadConns sets how many connections read at once. Default: the number
// of CPUs, at least 4. Writes always use one connection of their own.
func WithReadConns(n int) Option {
	return func(o *options) { o.readConns = n }
}

// WithSynchronous sets how hard a commit insists that it reached the disk
// (SQLite's synchronous pragma, in WAL mode): "full" or "normal". Default
// "full": every commit waits for an fsync of the write-ahead log, so a token
// rotation or a revocation acknowledged to a client survives a power loss or
// an operating-system crash. "normal" leaves out that fsync (the log is
// synced only at checkpoints): commits still survive a crash of the process
// and the database never corrupts, but a power loss or an operating-system
// crash may undo the last commits, bringing back a rotated refresh token or
// a revoked one as valid. It makes writes cheaper, most on slow disks.
func WithSynchronous(mode string) Option {
	return func(o *options) { o.synchronous = mode }
}

// Open opens the SQLite database at path, creating the file and its directory
// if they do not exist, and brings its schema up to date. The caller closes
// the Store. ctx bounds the opening and the migrations only.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := options{
		busyTimeout: DefaultBusyTimeout,
		readConns:   max(runtime.NumCPU(), minReadConns),
		synchronous: "full",
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.busyTimeout < time.Millisecond {
		return nil, fmt.Errorf("opening sqlite store: busy timeout %v is shorter than 1ms", o.busyTimeout)
	}
	if o.readConns < 1 {
		return nil, fmt.Errorf("opening sqlite store: %d read connections, want at least 1", o.readConns)
	}
	switch o.synchronous {
	case "full", "normal":
	default:
		return nil, fmt.Errorf("opening sqlite store: synchronous %q, want \"full\" or \"normal\"", o.synchronous)
	}
	if path == "" {
		return nil, errors.New("opening sqlite store: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening sqlite store %q: %w", path, err)
	}
	if err := sqlitefile.Create(abs); err != nil {
		return nil, fmt.Errorf("opening sqlite store %q: %w", path, err)
	}

	s := &Store{path: abs}
	s.w, err = sql.Open("sqlite", dsn(abs, o, false))
	if err != nil {
		return nil, fmt.Errorf("opening sqlite store %q: %w", path, err)
	}
	// One writer connection: writers of this process queue for it in
	// database/sql instead of meeting SQLITE_BUSY inside SQLite.
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)

	// The first connection switches the file to WAL; the migrations then
	// create the schema before any reader looks at it.
	if err := sqlitefile.ConnectWriter(ctx, s.w, o.busyTimeout); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("opening sqlite store %q: %w", path, err)
	}
	if err := migrate(ctx, s.w); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("opening sqlite store %q: %w", path, err)
	}

	s.r, err = sql.Open("sqlite", dsn(abs, o, true))
	if err != nil {
		s.w.Close()
		return nil, fmt.Errorf("opening sqlite store %q: %w", path, err)
	}
	s.r.SetMaxOpenConns(o.readConns)
	s.r.SetMaxIdleConns(o.readConns)
	s.r.SetConnMaxIdleTime(5 * time.Minute)
	if err := s.r.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("opening sqlite store %q: %w", path, err)
	}
	if err := s.q.prepare(ctx, s.r, s.w); err != nil {
		s.Close()
		return nil, fmt.Errorf("opening sqlite store %q: %w", path, err)
	}
	s.writes = make(chan *writeReq)
	s.stopWriter, s.writerDone = make(chan struct{}), make(chan struct{})
	contain.Go(nil, "store.sqlite.writer", s.runWriter, nil)
	return s, nil
}

// Close waits for the write in progress, if any, then closes the prepared
// statements and both connection pools. Writes that have not started fail.
func (s *Store) Close() error {
	if s.stopWriter != nil {
		s.stopOnce.Do(func() { close(s.stopWriter) })
		<-s.writerDone
	}
	errs := []error{s.q.close()}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing sqlite store %q: %w", s.path, err)
	}
	return nil
}

// dsn is the driver's name for the database at the absolute path abs: the writer's
// (sqlitefile.WriterDSN: WAL, BEGIN IMMEDIATE, o's synchronous), or a reader's, with
// query_only.
func dsn(abs string, o options, readOnly bool) string {
	if !readOnly {
		return sqlitefile.WriterDSN(abs, o.busyTimeout, strings.ToUpper(o.synchronous))
	}
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(o.busyTimeout.Milliseconds(), 10))
	q.Set("_foreign_keys", "1")
	q.Set("_query_only", "1")
	return sqlitefile.URI(abs, q)
}

var _ store.Store = (*Store)(nil)

// Status reads, without changing anything, the schema version of the SQLite store at
// path: no file is created (a missing one is absent) and the connection is read-only.
// absent is true when there is no file, or no schema in it yet; current is the
// version it is at, latest the version Open would bring it to.
func Status(ctx context.Context, path string) (absent bool, current, latest int, err error) {
	latest = len(migrations)
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, 0, latest, err
	}
	if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
		return true, 0, latest, nil
	} else if err != nil {
		return false, 0, latest, err
	}
	// immutable: no lock, no -wal or -shm file is created beside a WAL database (a
	// read-only connection would create both); a version read while a server
	// writes may be a moment old, which is all validate needs.
	// With a -wal file beside it (a server has the store open, or did not close
	// it), the file alone is not the database: it is read through the WAL, whose
	// -shm file is then there already.
	q := url.Values{}
	q.Set("mode", "ro")
	if _, err := os.Stat(abs + "-wal"); errors.Is(err, os.ErrNotExist) {
		q.Set("immutable", "1")
	}
	q.Set("_query_only", "1")
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}).String())
	if err != nil {
		return false, 0, latest, err
	}
	defer db.Close()
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`).Scan(&tables); err != nil {
		return false, 0, latest, fmt.Errorf("reading sqlite store %q: %w", path, err)
	}
	if tables == 0 {
		return true, 0, latest, nil
	}
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&current); err != nil {
		return false, 0, latest, fmt.Errorf("reading sqlite store %q: %w", path, err)
	}
	return current == 0, current, latest, nil
}
