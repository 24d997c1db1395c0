package queryhandler

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/sqliteengine"
)

func init() {
	caddy.RegisterModule(SQLiteEngine{})
}

// EngineModule is a query engine guest module (gatehouse.query_engines.*):
// Provision opens it, Engine hands it to the handler, Cleanup closes it.
type EngineModule interface {
	caddy.Module
	Engine() queryproxy.Engine
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
func (e *SQLiteEngine) Engine() queryproxy.Engine { return e.engine }

// Cleanup closes the database.
func (e *SQLiteEngine) Cleanup() error {
	if e.engine == nil {
		return nil
	}
	return e.engine.Close()
}

// Interface guards
var (
	_ EngineModule       = (*SQLiteEngine)(nil)
	_ caddy.Provisioner  = (*SQLiteEngine)(nil)
	_ caddy.Validator    = (*SQLiteEngine)(nil)
	_ caddy.CleanerUpper = (*SQLiteEngine)(nil)
)
