package queryhandler

import (
	"fmt"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/iqengine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

func init() {
	caddy.RegisterModule(IQEngine{})
}

// ForwarderModule is a query engine guest module that takes IQL itself
// (gatehouse.query_engines.iq).
type ForwarderModule interface {
	caddy.Module
	Forwarder() engine.Forwarder
}

// IQEngine hands statements to the platform's own query service
// (gatehouse.query_engines.iq): each statement, once it passed the table
// policy, is re-printed as canonical IQL in the upstream's documented
// grammar (our extensions, ORDER BY, LIMIT, NOT, <>, parentheses, UPDATE
// and DELETE, are refused with 400) and POSTed to the upstream's /query
// with the caller's token and Request-Id; per-user rows are the
// upstream's to filter (it knows the user from the token). Its answer is
// read as it arrives, checked for the result shape and the asked columns,
// and the result rebuilt from it.
type IQEngine struct {
	// URL is the upstream's base URL (http or https); statements go to
	// URL/query. Required.
	URL string `json:"url,omitempty"`

	// Tables is the upstream's catalog: each table's columns and their
	// result types (String, Integer, Decimal, Boolean, DateTime, Binary).
	// Required: only these names can be asked for.
	Tables []IQTable `json:"tables,omitempty"`

	// Timeout bounds one upstream request, answer included: a select's
	// answer is read as the caller reads the result, so the caller's
	// reading counts. Default 30s.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	// MaxAnswerSize bounds an upstream answer, in bytes. Default 64 MiB.
	MaxAnswerSize int64 `json:"max_answer_size,omitempty"`

	// MaxConns bounds the connections to the upstream, so the statements
	// in flight to it at once, whoever sends them (each user has at most
	// the handler's per-user bound): a request beyond it waits for a
	// connection within its timeout. Default 32.
	MaxConns int `json:"max_conns,omitempty"`

	engine *iqengine.Engine
}

// IQTable is one table of the upstream's catalog.
type IQTable struct {
	// Name is the table's name as the upstream spells it.
	Name string `json:"name"`
	// Columns maps each column, as the upstream spells it, to its type,
	// in the order "select *" lists them.
	Columns []IQColumn `json:"columns"`
}

// IQColumn is one column of an IQTable.
type IQColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// CaddyModule returns the Caddy module information.
func (IQEngine) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gatehouse.query_engines.iq",
		New: func() caddy.Module { return new(IQEngine) },
	}
}

func (e *IQEngine) config() (iqengine.Config, error) {
	cfg := iqengine.Config{URL: e.URL, Timeout: time.Duration(e.Timeout), MaxAnswerBytes: e.MaxAnswerSize, MaxConns: e.MaxConns}
	for _, t := range e.Tables {
		st := sqlgen.Table{Name: t.Name}
		for _, c := range t.Columns {
			typ := sqlgen.Type(c.Type)
			switch typ {
			case sqlgen.String, sqlgen.Integer, sqlgen.Decimal, sqlgen.Boolean, sqlgen.DateTime, sqlgen.Binary:
			default:
				return cfg, fmt.Errorf("table %q column %q: type %q is not String, Integer, Decimal, Boolean, DateTime or Binary", t.Name, c.Name, c.Type)
			}
			st.Columns = append(st.Columns, sqlgen.Column{Name: c.Name, Type: typ})
		}
		cfg.Catalog.Tables = append(cfg.Catalog.Tables, st)
	}
	return cfg, cfg.Validate()
}

// Validate checks the configuration. It changes nothing.
func (e *IQEngine) Validate() error {
	if _, err := e.config(); err != nil {
		return fmt.Errorf("gatehouse.query_engines.iq: %w", err)
	}
	return nil
}

// Provision builds the engine.
func (e *IQEngine) Provision(caddy.Context) error {
	cfg, err := e.config()
	if err != nil {
		return fmt.Errorf("gatehouse.query_engines.iq: %w", err)
	}
	if e.engine, err = iqengine.New(cfg); err != nil {
		return fmt.Errorf("gatehouse.query_engines.iq: %w", err)
	}
	return nil
}

// Forwarder is the built engine.
func (e *IQEngine) Forwarder() engine.Forwarder { return e.engine }

// UnmarshalCaddyfile reads the engine's block, after "engine iq <url>":
//
//	engine iq <url> {
//		timeout <duration>
//		max_answer_size <bytes>
//		max_conns <n>
//		table <Name> <Column>:<Type>...   # repeatable
//	}
func (e *IQEngine) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return cfutil.ParseBlock(d, cfutil.NewOnceSet("gatehouse_query: engine iq: ", "table"), func(name string) (err error) {
		switch name {
		case "timeout":
			e.Timeout, err = cfutil.DurationArg(d)
		case "max_answer_size":
			var n int
			n, err = cfutil.PositiveIntArg(d)
			e.MaxAnswerSize = int64(n)
		case "max_conns":
			e.MaxConns, err = cfutil.PositiveIntArg(d)
		case "table":
			args := d.RemainingArgs()
			if len(args) < 2 {
				return d.ArgErr()
			}
			t := IQTable{Name: args[0]}
			for _, c := range args[1:] {
				col, typ, ok := strings.Cut(c, ":")
				if !ok || col == "" || typ == "" {
					return d.Errf("table %s: column %q is not <Name>:<Type>", args[0], c)
				}
				t.Columns = append(t.Columns, IQColumn{Name: col, Type: typ})
			}
			e.Tables = append(e.Tables, t)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
}

// traceTarget names the engine and its upstream's URL (which holds no user
// info, query or fragment: Validate) in the query spans.
func (e *IQEngine) traceTarget() (string, string) { return "iq", e.URL }

// Interface guards
var (
	_ ForwarderModule   = (*IQEngine)(nil)
	_ tracedEngine      = (*IQEngine)(nil)
	_ caddy.Provisioner = (*IQEngine)(nil)
	_ caddy.Validator   = (*IQEngine)(nil)
)
