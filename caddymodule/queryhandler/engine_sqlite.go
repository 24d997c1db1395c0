package queryhandler

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqliteengine"
)

func init() {
	caddy.RegisterModule(SQLiteEngine{})
}

// EngineModule is a query engine guest module (gatehouse.query_engines.*):
// Provision opens it, Engine hands it to the handler, Cleanup closes it.
type EngineModule interface {
	caddy.Module
	Engine() engine.Engine
}

// SQLiteEngine is the embedded engine (gatehouse.query_engines.sqlite): a
// SQLite database file, read on read-only connections, written through one
// connection, each statement under a time limit.
type SQLiteEngine struct {
	// Path is the database file; created (mode 0600) when missing.
	// Default: gatehouse/query.db in Caddy's data directory. A relative
	// path is relative to the working directory.
	Path string `json:"path,omitempty"`

	// InitFile is an SQL script that creates the schema and data of a new
	// database (one holding no schema yet), run once in one transaction.
	// The demo's is examples/querydb/demo.sql. Default none.
	InitFile string `json:"init_file,omitempty"`

	// StatementTimeout is the time limit of one statement, reading its
	// rows included. Default 5s.
	StatementTimeout caddy.Duration `json:"statement_timeout,omitempty"`

	// MaxReadConns is how many read-only connections run queries at once.
	// Default 4.
	MaxReadConns int `json:"max_read_conns,omitempty"`

	// TraceStatements logs the SQL text of every statement the engine runs
	// (at Info, logger gatehouse.query_engines.sqlite). The text never holds a
	// value (values are bind arguments, which are not logged), so it is
	// safe to keep on; it is how a test proves nothing ran but the
	// intended statement. Default false.
	TraceStatements bool `json:"trace_statements,omitempty"`

	engine *sqliteengine.Engine
	path   string // the database file, Path or its default
	tmp    string // validating: the throwaway directory the database was opened in
}

// CaddyModule returns the Caddy module information.
func (SQLiteEngine) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gatehouse.query_engines.sqlite",
		New: func() caddy.Module { return new(SQLiteEngine) },
	}
}

// Provision opens the database, creating it from InitFile when new.
func (e *SQLiteEngine) Provision(ctx caddy.Context) error {
	log := ctx.Logger()
	path := e.Path
	if path == "" {
		path = filepath.Join(caddy.AppDataDir(), "gatehouse", "query.db")
	}
	e.path = path
	cfg := sqliteengine.Config{Path: path, StatementTimeout: time.Duration(e.StatementTimeout), MaxReadConns: e.MaxReadConns, Logger: log}
	if e.InitFile != "" {
		b, err := os.ReadFile(e.InitFile)
		if err != nil {
			return fmt.Errorf("gatehouse.query_engines.sqlite: init_file: %w", err)
		}
		cfg.Init = string(b)
	}
	if e.TraceStatements {
		cfg.Trace = func(sql string, _ []any) { log.Info("query statement", zap.String("sql", sql)) }
	}
	if caddymodule.Validating() {
		// `validate` writes nothing: the database is opened as a copy (or, absent,
		// created from init_file) in a throwaway directory, so that init_file and the
		// table policy are checked against it.
		tmp, err := os.MkdirTemp("", "gatehouse-validate-")
		if err != nil {
			return err
		}
		e.tmp = tmp
		copyPath := filepath.Join(tmp, "query.db")
		if err := copyFile(path, copyPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("gatehouse.query_engines.sqlite: validating %s: %w", path, err)
		}
		log.Info("validate: the query database is checked on a copy, not changed", zap.String("path", path))
		cfg.Path = copyPath
	}
	eng, err := sqliteengine.Open(ctx, cfg)
	if err != nil {
		return fmt.Errorf("gatehouse.query_engines.sqlite: opening %s: %w", path, err)
	}
	e.engine = eng
	return nil
}

// Validate checks the configuration. It changes nothing.
func (e *SQLiteEngine) Validate() error {
	if e.StatementTimeout < 0 || e.MaxReadConns < 0 {
		return fmt.Errorf("gatehouse.query_engines.sqlite: negative statement_timeout or max_read_conns")
	}
	return nil
}

// Engine is the opened engine.
func (e *SQLiteEngine) Engine() engine.Engine { return e.engine }

// Cleanup closes the database (and, after `validate`, removes its copy).
func (e *SQLiteEngine) Cleanup() error {
	var err error
	if e.engine != nil {
		err = e.engine.Close()
	}
	if e.tmp != "" {
		err = errors.Join(err, os.RemoveAll(e.tmp))
	}
	return err
}

// copyFile copies the file src to dst (a new file), and the write-ahead log beside
// it, if any.
func copyFile(src, dst string) error {
	for _, suffix := range []string{"", "-wal"} {
		in, err := os.Open(src + suffix)
		if err != nil {
			if suffix != "" && errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		out, err := os.OpenFile(dst+suffix, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			_, err = io.Copy(out, in)
			err = errors.Join(err, out.Close())
		}
		in.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// traceTarget names the engine and its database file in the query spans.
func (e *SQLiteEngine) traceTarget() (string, string) { return "sqlite", e.path }

// Interface guards
var (
	_ EngineModule       = (*SQLiteEngine)(nil)
	_ tracedEngine       = (*SQLiteEngine)(nil)
	_ caddy.Provisioner  = (*SQLiteEngine)(nil)
	_ caddy.Validator    = (*SQLiteEngine)(nil)
	_ caddy.CleanerUpper = (*SQLiteEngine)(nil)
)
