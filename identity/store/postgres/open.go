package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/store"
)

// DefaultMaxConns is the size of the connection pool when Config.MaxConns
// is zero.
const DefaultMaxConns = 10

// Config is how Open connects.
type Config struct {
	// DSN names the database: a URL (postgres://user:password@host:5432/
	// gatehouse?sslmode=verify-full) or key=value settings (host=...
	// dbname=...), as libpq takes them; libpq's environment variables
	// (PGHOST, PGPASSWORD, ...) and ~/.pgpass fill in what it leaves out.
	// Required. It may hold a password: it is never logged, and errors
	// never quote it.
	DSN string

	// MaxConns bounds the connection pool: at most this many connections
	// to PostgreSQL at once; callers beyond it wait for a free one (within
	// their context). Default DefaultMaxConns (10). A pool_max_conns
	// setting in the DSN is overridden. Several instances on one database
	// together need at most the sum of theirs, below the server's
	// max_connections.
	MaxConns int

	// DisableNotify turns the revocation notices off: no NOTIFY is sent
	// with a revocation and no connection LISTENs, so the verifiers of
	// every instance find a revocation made elsewhere by polling alone
	// (every 5 s by default) and the gateway's sessions end up to that
	// much later. For engines that speak PostgreSQL's protocol without
	// LISTEN/NOTIFY (CockroachDB). Default false: each revocation NOTIFYs
	// the channel gatehouse_revocations in its own transaction, and one
	// connection per Store, outside the pool, LISTENs to it once a
	// verifier asks (RevocationNotices).
	DisableNotify bool

	// Logger receives what the store has to say: where it connected (host,
	// port, database, user), the schema migrations it ran, and when the
	// database became unreachable and reachable again. Default: no
	// logging.
	Logger *zap.Logger
}

// Store is a store.Store kept in a PostgreSQL database. It is safe for
// concurrent use, and any number of Stores, in one process or in several,
// may share the same database.
type Store struct {
	pool   *db
	target Target
	log    *zap.Logger
	health *health
	notify *notifier // nil when Config.DisableNotify
}

// Open connects to the database cfg.DSN names and brings its schema up to
// date (see migrate.go). The caller closes the Store. ctx bounds the
// connecting and the migrations only.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	return open(ctx, cfg, migrations)
}

// open is Open bringing the schema to the last of migs.
func open(ctx context.Context, cfg Config, migs [][]string) (*Store, error) {
	if cfg.MaxConns < 0 {
		return nil, fmt.Errorf("opening postgres store: max connections %d, want at least 1 (0 for the default)", cfg.MaxConns)
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	pcfg, err := parseDSN(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("opening postgres store: %w", err)
	}
	target := targetOf(pcfg)
	password := pcfg.ConnConfig.Password
	pcfg.MaxConns = DefaultMaxConns
	if cfg.MaxConns > 0 {
		pcfg.MaxConns = int32(min(cfg.MaxConns, 1<<30))
	}
	pcfg.MinConns = 0
	params := pcfg.ConnConfig.RuntimeParams
	// Every statement and transaction runs at READ COMMITTED whatever the
	// server's default: the compare-and-swaps rely on its re-check of a
	// row that a concurrent transaction changed (see tx.go).
	params["default_transaction_isolation"] = "read committed"
	if params["application_name"] == "" {
		params["application_name"] = "gatehouse"
	}

	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("opening postgres store %s: %w", target, scrub(err, password))
	}
	h := newHealth(log, time.Now)
	s := &Store{pool: &db{Pool: pool, health: h}, target: target, log: log, health: h}
	if !cfg.DisableNotify {
		s.notify = newNotifier(pcfg.ConnConfig, h, log)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening postgres store %s: connecting: %w", target, scrub(err, password))
	}
	version, err := s.migrate(ctx, migs)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening postgres store %s: %w", target, scrub(err, password))
	}
	log.Info("postgres store opened",
		zap.String("host", target.Host),
		zap.Uint16("port", target.Port),
		zap.String("database", target.Database),
		zap.String("user", target.User),
		zap.Int32("max_conns", pcfg.MaxConns),
		zap.Bool("revocation_notify", !cfg.DisableNotify),
		zap.Int("schema_version", version))
	return s, nil
}

// Target tells where the Store is connected, without the password.
func (s *Store) Target() Target { return s.target }

// Unavailable returns how much of the time from from to to this Store
// found the database unreachable (store.Outages): from the first statement
// that failed to reach it, or the loss of the listener's connection, to
// the first success after. The last 64 outages are remembered.
func (s *Store) Unavailable(from, to time.Time) time.Duration {
	return s.health.Unavailable(from, to)
}

// Close stops the listener, if any (closing the channels of
// RevocationNotices), waits for the statements in progress, then closes
// every connection of the pool. Calls after Close fail.
func (s *Store) Close() error {
	if s.pool == nil {
		return errors.New("closing postgres store: not open")
	}
	if s.notify != nil {
		s.notify.close()
	}
	s.pool.Close()
	return nil
}

var (
	_ store.Store              = (*Store)(nil)
	_ store.RevocationNotifier = (*Store)(nil)
	_ store.Outages            = (*Store)(nil)
)

// Status reads, without changing anything, the schema version of the PostgreSQL store
// dsn names: one connection, a READ ONLY transaction, rolled back. absent is true when
// the database holds no schema yet; current is the version it is at, latest the
// version Open would bring it to.
func Status(ctx context.Context, dsn string) (absent bool, current, latest int, err error) {
	latest = len(migrations)
	pcfg, err := parseDSN(dsn)
	if err != nil {
		return false, 0, latest, err
	}
	password := pcfg.ConnConfig.Password
	conn, err := pgx.ConnectConfig(ctx, pcfg.ConnConfig)
	if err != nil {
		return false, 0, latest, fmt.Errorf("connecting to postgres store %s: %w", targetOf(pcfg), scrub(err, password))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return false, 0, latest, scrub(err, password)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return false, 0, latest, scrub(err, password)
	}
	if !exists {
		return true, 0, latest, nil
	}
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return false, 0, latest, scrub(err, password)
	}
	return current == 0, current, latest, nil
}
