package queryhandler

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// secret is the password of the DSNs of these tests: no error may show it.
const secret = "s3cr3t-Pa55"

func TestParsePostgres(t *testing.T) {
	tests := []struct {
		name, input string
		want        string // the engine's JSON; "" for an error
	}{
		{"dsn argument", `gatehouse_query {
			engine postgres "postgres://app:` + secret + `@db:5432/market"
		}`, `{"dsn":"postgres://app:` + secret + `@db:5432/market","engine":"postgres"}`},
		{"dsn_env and every option", `gatehouse_query {
			engine postgres {
				dsn_env MARKET_DSN
				max_conns 16
				statement_timeout 2s
				schema market
				trace_statements
			}
		}`, `{"dsn_env":"MARKET_DSN","engine":"postgres","max_conns":16,"schema":"market","statement_timeout":2000000000,"trace_statements":true}`},
		{"both", `gatehouse_query {
			engine postgres "postgres://app:` + secret + `@db/market" {
				dsn_env MARKET_DSN
			}
		}`, ""},
		{"neither", `gatehouse_query {
			engine postgres
		}`, ""},
		{"unknown subdirective", `gatehouse_query {
			engine postgres "postgres://app:` + secret + `@db/market" {
				password x
			}
		}`, ""},
		{"zero conns", `gatehouse_query {
			engine postgres "postgres://app:` + secret + `@db/market" {
				max_conns 0
			}
		}`, ""},
		{"too many arguments", `gatehouse_query {
			engine postgres "postgres://app:` + secret + `@db/market" extra
		}`, ""},
		{"another engine", `gatehouse_query {
			engine mysql "app:` + secret + `@db/market"
		}`, ""},
		{"sqlite still", `gatehouse_query {
			engine sqlite data/q.db {
				max_read_conns 2
			}
		}`, `{"engine":"sqlite","max_read_conns":2,"path":"data/q.db"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := new(Handler)
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if tt.want == "" {
				if err == nil {
					t.Fatalf("parsed: %s", h.EngineRaw)
				}
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("the error shows the DSN's password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(h.EngineRaw) != tt.want {
				t.Fatalf("engine %s\nwant   %s", h.EngineRaw, tt.want)
			}
		})
	}
}

func TestPostgresEngineValidate(t *testing.T) {
	for name, e := range map[string]PostgresEngine{
		"neither":          {},
		"both":             {DSN: "postgres://db/x", DSNEnv: "X"},
		"negative conns":   {DSN: "postgres://db/x", MaxConns: -1},
		"negative timeout": {DSN: "postgres://db/x", StatementTimeout: caddy.Duration(-time.Second)},
	} {
		if err := e.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
	if err := (&PostgresEngine{DSNEnv: "X"}).Validate(); err != nil {
		t.Error(err)
	}
}

// provision provisions e as Caddy would load it from its JSON.
func provision(t *testing.T, e *PostgresEngine) error {
	t.Helper()
	b, _ := json.Marshal(e)
	var loaded PostgresEngine
	if err := json.Unmarshal(b, &loaded); err != nil {
		t.Fatal(err)
	}
	*e = loaded
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	err := e.Provision(ctx)
	t.Cleanup(func() {
		if err := e.Cleanup(); err != nil {
			t.Error(err)
		}
	})
	return err
}

// TestPostgresEngineProvision: provisioning fails, without showing the password, when the
// DSN is bad, unset or unreachable; and opens the engine when it is good (from the
// environment, against the test server GATEHOUSE_TEST_POSTGRES names).
func TestPostgresEngineProvision(t *testing.T) {
	t.Setenv("GATEHOUSE_TEST_EMPTY_DSN", "")
	for name, e := range map[string]*PostgresEngine{
		"bad dsn":                  {DSN: "postgres://app:" + secret + "@db:port/market"},
		"empty env":                {DSNEnv: "GATEHOUSE_TEST_EMPTY_DSN"},
		"no server":                {DSN: "postgres://app:" + secret + "@127.0.0.1:1/market?connect_timeout=2"},
		"both":                     {DSN: "postgres://app:" + secret + "@127.0.0.1:1/market", DSNEnv: "X"},
		"key=value dsn, no server": {DSN: "host=127.0.0.1 port=1 password=" + secret + " connect_timeout=2"},
	} {
		t.Run(name, func(t *testing.T) {
			err := provision(t, e)
			if err == nil {
				t.Fatal("provisioned")
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error shows the DSN's password: %v", err)
			}
		})
	}

	url := os.Getenv("GATEHOUSE_TEST_POSTGRES")
	if url == "" {
		t.Skip("set GATEHOUSE_TEST_POSTGRES to a PostgreSQL URL to provision against a real server (./test.sh starts one)")
	}
	t.Setenv("GATEHOUSE_TEST_QUERY_DSN", url)
	// The server's information_schema: views of PostgreSQL's own, there on every server.
	e := &PostgresEngine{DSNEnv: "GATEHOUSE_TEST_QUERY_DSN", MaxConns: 2, StatementTimeout: caddy.Duration(time.Second), Schema: "information_schema"}
	if err := provision(t, e); err != nil {
		t.Fatal(err)
	}
	cat, err := e.Engine().Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if tables, ok := cat.Table("tables"); !ok || len(tables.Columns) == 0 {
		t.Fatalf("information_schema.tables is not in the catalog: %v", cat.Tables)
	}
}
