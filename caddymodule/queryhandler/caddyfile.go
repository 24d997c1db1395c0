package queryhandler

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
	"github.com/gatehouse/gatehouse/queryproxy"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("gatehouse_query", parseHandler)
	httpcaddyfile.RegisterDirectiveOrder("gatehouse_query", httpcaddyfile.Before, "respond")
}

func parseHandler(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	handler := new(Handler)
	err := handler.UnmarshalCaddyfile(h.Dispenser)
	return handler, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	gatehouse_query [<matcher>] {
//		prefix <path>                       # routes under <path>/query
//		engine iq <url> {                   # the platform's own query service
//			timeout <duration>
//			max_answer_size <bytes>
//			max_conns <n>                   # connections to it at once (32)
//			table <Name> <Column>:<Type>...
//		}
//		engine sqlite [<path>] {            # the default engine
//			init_file <file.sql>            # creates a new database
//			statement_timeout <duration>
//			max_read_conns <n>
//			trace_statements
//		}
//		engine postgres [<dsn>] {           # or PostgreSQL
//			dsn_env <NAME>                  # the DSN from an environment variable instead
//			max_conns <n>
//			statement_timeout <duration>
//			schema <schema>
//			trace_statements
//		}
//		table <Name> {                      # repeatable; unnamed tables are invisible
//			read <scope>...                 # any one of them reads
//			write <scope>...                # any one of them writes (with read)
//			owner <column> [<claim>]        # per-user rows (claim default sub)
//			hidden <column>...
//			read_only <column>...           # read, never written (a key the database assigns)
//			venue_column <column>           # rows of the caller's venues only (market data)
//			feed <feed>                     # the venues' feed a caller must hold (quotes)
//			venues <venue>...               # this table's known venues (default: the handler's)
//		}
//		venues <venue>...                   # the venues the deployment knows
//		allowed_origins <origin>...
//		max_body_size <bytes>
//		max_rows <n>
//		max_concurrent_per_user <n>
//		max_user_share <percent>
//		readiness <name> [optional]       # this engine's check in gatehouse_health ready
//		max_statement_size <bytes>
//		max_in_list <n>
//		max_criteria <n>
//		max_insert_rows <n>
//		max_nesting <n>
//		realm <realm>
//		trace_subject                       # the subject on the query spans (default: the client only)
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	if err := cfutil.NoArgs(d); err != nil {
		return err
	}
	once := cfutil.NewOnceSet("gatehouse_query: ", "table")
	return cfutil.ParseBlock(d, once, func(name string) (err error) {
		switch name {
		case "prefix":
			h.Prefix, err = cfutil.OneArg(d)
		case "engine":
			err = h.parseEngine(d)
		case "table":
			err = h.parseTable(d)
		case "allowed_origins":
			h.AllowedOrigins, err = cfutil.ListArgs(d)
		case "max_body_size":
			var n int
			n, err = cfutil.PositiveIntArg(d)
			h.MaxBodySize = int64(n)
		case "max_rows":
			h.MaxRows, err = cfutil.PositiveIntArg(d)
		case "max_concurrent_per_user":
			h.MaxConcurrentPerUser, err = cfutil.PositiveIntArg(d)
		case "max_user_share":
			h.MaxUserShare, err = cfutil.PositiveIntArg(d)
		case "readiness":
			h.Readiness, h.ReadinessOptional, err = cfutil.ReadinessArgs(d)
		case "max_statement_size":
			h.MaxStatementSize, err = cfutil.PositiveIntArg(d)
		case "max_in_list":
			h.MaxInList, err = cfutil.PositiveIntArg(d)
		case "max_criteria":
			h.MaxCriteria, err = cfutil.PositiveIntArg(d)
		case "max_insert_rows":
			h.MaxInsertRows, err = cfutil.PositiveIntArg(d)
		case "max_nesting":
			h.MaxNesting, err = cfutil.PositiveIntArg(d)
		case "venues":
			h.Venues, err = cfutil.ListArgs(d)
		case "realm":
			h.Realm, err = cfutil.OneArg(d)
		case "trace_subject":
			h.TraceSubject, err = cfutil.Flag(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
}

// parseEngine parses "engine sqlite [<path>] { ... }" and "engine postgres [<dsn>] { ... }".
func (h *Handler) parseEngine(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) < 1 || len(args) > 2 {
		return d.Errf("engine: expected sqlite [<path>], postgres [<dsn>] or iq <url>, got %d arguments", len(args))
	}
	switch args[0] {
	case "sqlite":
		return h.parseSQLite(d, args[1:])
	case "postgres":
		return h.parsePostgres(d, args[1:])
	case "iq":
		if len(args) != 2 {
			return d.Err("engine iq: expected the upstream's URL")
		}
		return h.parseIQ(d, args[1])
	}
	return d.Errf("engine: expected sqlite, postgres or iq, got %q", args[0])
}

// parseSQLite parses the rest of "engine sqlite [<path>] { ... }".
func (h *Handler) parseSQLite(d *caddyfile.Dispenser, args []string) error {
	e := SQLiteEngine{}
	if len(args) == 1 {
		e.Path = args[0]
	}
	err := cfutil.ParseBlock(d, cfutil.NewOnceSet("gatehouse_query: engine: "), func(name string) (err error) {
		switch name {
		case "init_file":
			e.InitFile, err = cfutil.OneArg(d)
		case "statement_timeout":
			e.StatementTimeout, err = cfutil.DurationArg(d)
		case "max_read_conns":
			e.MaxReadConns, err = cfutil.PositiveIntArg(d)
		case "trace_statements":
			e.TraceStatements, err = cfutil.Flag(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	if err != nil {
		return err
	}
	h.EngineRaw = caddyconfig.JSONModuleObject(e, "engine", "sqlite", nil)
	return nil
}

// parseIQ parses "engine iq <url> { ... }".
func (h *Handler) parseIQ(d *caddyfile.Dispenser, url string) error {
	e := IQEngine{URL: url}
	if err := e.UnmarshalCaddyfile(d); err != nil {
		return err
	}
	h.EngineRaw = caddyconfig.JSONModuleObject(e, "engine", "iq", nil)
	return nil
}

// parsePostgres parses the rest of "engine postgres [<dsn>] { ... }". Its errors never
// quote the DSN, which may hold a password.
func (h *Handler) parsePostgres(d *caddyfile.Dispenser, args []string) error {
	e := PostgresEngine{}
	if len(args) == 1 {
		e.DSN = args[0]
	}
	err := cfutil.ParseBlock(d, cfutil.NewOnceSet("gatehouse_query: engine postgres: "), func(name string) (err error) {
		switch name {
		case "dsn_env":
			e.DSNEnv, err = cfutil.SecretArg(d, "engine postgres: dsn_env")
		case "max_conns":
			e.MaxConns, err = cfutil.PositiveIntArg(d)
		case "statement_timeout":
			e.StatementTimeout, err = cfutil.DurationArg(d)
		case "schema":
			e.Schema, err = cfutil.OneArg(d)
		case "trace_statements":
			e.TraceStatements, err = cfutil.Flag(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	if err != nil {
		return err
	}
	if (e.DSN == "") == (e.DSNEnv == "") {
		return d.Err("engine postgres: give the DSN as an argument or dsn_env, not both and not neither")
	}
	h.EngineRaw = caddyconfig.JSONModuleObject(e, "engine", "postgres", nil)
	return nil
}

// parseTable parses "table <Name> { read ...; write ...; owner ...; hidden ...; read_only ...;
// venue_column ...; feed ...; venues ... }".
func (h *Handler) parseTable(d *caddyfile.Dispenser) error {
	name, err := cfutil.OneArg(d)
	if err != nil {
		return err
	}
	t := queryproxy.TablePolicy{Table: name}
	err = cfutil.ParseBlock(d, cfutil.NewOnceSet("gatehouse_query: table "+strconv.Quote(name)+": "), func(sub string) (err error) {
		switch sub {
		case "read":
			t.Read, err = cfutil.ListArgs(d)
		case "write":
			t.Write, err = cfutil.ListArgs(d)
		case "owner":
			args := d.RemainingArgs()
			if len(args) < 1 || len(args) > 2 {
				return d.ArgErr()
			}
			t.Owner = args[0]
			if len(args) == 2 {
				t.OwnerClaim = args[1]
			}
		case "hidden":
			t.Hidden, err = cfutil.ListArgs(d)
		case "read_only":
			t.ReadOnly, err = cfutil.ListArgs(d)
		case "venue_column":
			t.VenueColumn, err = cfutil.OneArg(d)
		case "feed":
			t.Feed, err = cfutil.OneArg(d)
		case "venues":
			t.Venues, err = cfutil.ListArgs(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	h.Tables = append(h.Tables, t)
	return err
}

// Interface guards
var _ caddyfile.Unmarshaler = (*Handler)(nil)
