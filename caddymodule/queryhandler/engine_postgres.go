package queryhandler

import (
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/pgengine"
)

func init() {
	caddy.RegisterModule(PostgresEngine{})
}

// PostgresEngine is a PostgreSQL database (gatehouse.query_engines.postgres): reads in
// read-only transactions, writes in one transaction per request, each statement under a
// time limit and canceled on the server when the client goes away, over a bounded pool
// of connections. The DSN's password is never logged.
type PostgresEngine struct {
	// DSN is the connection string: a URL
	// (postgres://user:password@host:5432/db?sslmode=verify-full) or key=value pairs.
	// Exactly one of DSN and DSNEnv is required. Risk: a password written here is part of
	// the configuration, which Caddy's admin API serves (GET /config/); prefer DSNEnv, or
	// a DSN without a password and PGPASSWORD or ~/.pgpass.
	DSN string `json:"dsn,omitempty"`

	// DSNEnv names the environment variable that holds the DSN, read at provisioning, so
	// that the DSN, and its password, stay out of the configuration.
	DSNEnv string `json:"dsn_env,omitempty"`

	// MaxConns bounds the connections to the database; statements beyond it wait for one
	// (under their time limit). Default 8.
	MaxConns int `json:"max_conns,omitempty"`

	// StatementTimeout is the time limit of one statement, reading its rows included,
	// enforced by the engine and by the server (statement_timeout). Default 5s.
	StatementTimeout caddy.Duration `json:"statement_timeout,omitempty"`

	// Schema is the schema whose tables and views the service serves. Default "public".
	Schema string `json:"schema,omitempty"`

	// TraceStatements logs the SQL text of every statement the engine runs (at Info,
	// logger gatehouse.query_engines.postgres). The text never holds a value (values are
	// bind arguments, which are not logged). Default false.
	TraceStatements bool `json:"trace_statements,omitempty"`

	engine *pgengine.Engine
}

// CaddyModule returns the Caddy module information.
func (PostgresEngine) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gatehouse.query_engines.postgres",
		New: func() caddy.Module { return new(PostgresEngine) },
	}
}

// Provision connects to the database and reads its catalog. It checks the configuration
// first: Caddy validates a module only after provisioning it.
func (e *PostgresEngine) Provision(ctx caddy.Context) error {
	if err := e.Validate(); err != nil {
		return err
	}
	log := ctx.Logger()
	dsn := e.DSN
	if e.DSNEnv != "" {
		var err error
		if dsn, err = cfutil.Env("gatehouse.query_engines.postgres: dsn_env", e.DSNEnv); err != nil {
			return err
		}
	}
	cfg := pgengine.Config{DSN: dsn, MaxConns: e.MaxConns, StatementTimeout: time.Duration(e.StatementTimeout),
		Schema: e.Schema, Logger: log}
	if e.TraceStatements {
		cfg.Trace = func(sql string, _ []any) { log.Info("query statement", zap.String("sql", sql)) }
	}
	// pgengine's errors name the server as user@host:port/database, never with the DSN.
	eng, err := pgengine.Open(ctx, cfg)
	if err != nil {
		return fmt.Errorf("gatehouse.query_engines.postgres: %w", err)
	}
	e.engine = eng
	return nil
}

// Validate checks the configuration. It changes nothing.
func (e *PostgresEngine) Validate() error {
	switch {
	case e.DSN == "" && e.DSNEnv == "":
		return errors.New("gatehouse.query_engines.postgres: dsn or dsn_env is required")
	case e.DSN != "" && e.DSNEnv != "":
		return errors.New("gatehouse.query_engines.postgres: dsn and dsn_env are exclusive")
	case e.MaxConns < 0 || e.StatementTimeout < 0:
		return errors.New("gatehouse.query_engines.postgres: negative max_conns or statement_timeout")
	}
	return nil
}

// Engine is the opened engine.
func (e *PostgresEngine) Engine() engine.Engine { return e.engine }

// Cleanup closes the connections.
func (e *PostgresEngine) Cleanup() error {
	if e.engine == nil {
		return nil
	}
	return e.engine.Close()
}

// traceTarget names the engine and its server (user@host:port/database,
// never the DSN) in the query spans.
func (e *PostgresEngine) traceTarget() (string, string) { return "postgres", e.engine.Server() }

// Interface guards
var (
	_ EngineModule       = (*PostgresEngine)(nil)
	_ tracedEngine       = (*PostgresEngine)(nil)
	_ caddy.Provisioner  = (*PostgresEngine)(nil)
	_ caddy.Validator    = (*PostgresEngine)(nil)
	_ caddy.CleanerUpper = (*PostgresEngine)(nil)
)
