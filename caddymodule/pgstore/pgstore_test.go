package pgstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/identity/store/postgres/pgtest"
)

func TestUnmarshalCaddyfile(t *testing.T) {
	const dsn = "postgres://gate@db.example/gatehouse"
	tests := []struct {
		name, input string
		want        PostgresStore
		err         string
	}{
		{"argument", "postgres " + dsn, PostgresStore{DSN: dsn}, ""},
		{"block dsn", "postgres {\n\tdsn " + dsn + "\n}", PostgresStore{DSN: dsn}, ""},
		{"block dsn_env", "postgres {\n\tdsn_env PG_DSN\n\tmax_conns 20\n}", PostgresStore{DSNEnv: "PG_DSN", MaxConns: 20}, ""},
		{"argument and block", "postgres " + dsn + " {\n\tmax_conns 5\n}", PostgresStore{DSN: dsn, MaxConns: 5}, ""},
		{"key=value argument", `postgres "host=db.example dbname=gatehouse"`, PostgresStore{DSN: "host=db.example dbname=gatehouse"}, ""},
		{"nothing", "postgres", PostgresStore{}, "a DSN (argument or dsn) or dsn_env is required"},
		{"empty block", "postgres {\n}", PostgresStore{}, "a DSN (argument or dsn) or dsn_env is required"},
		{"dsn and dsn_env", "postgres " + dsn + " {\n\tdsn_env PG_DSN\n}", PostgresStore{}, "exclusive"},
		{"two arguments", "postgres a b", PostgresStore{}, "the DSN is one argument"},
		{"dsn of two words", "postgres {\n\tdsn user=g password=hunter2\n}", PostgresStore{}, "dsn is one argument"},
		{"dsn twice", "postgres " + dsn + " {\n\tdsn " + dsn + "\n}", PostgresStore{}, "postgres store: dsn given twice"},
		{"dsn_env twice", "postgres {\n\tdsn_env A\n\tdsn_env B\n}", PostgresStore{}, "postgres store: dsn_env given twice"},
		{"max_conns zero", "postgres " + dsn + " {\n\tmax_conns 0\n}", PostgresStore{}, "not a positive integer"},
		{"max_conns word", "postgres " + dsn + " {\n\tmax_conns many\n}", PostgresStore{}, "not a positive integer"},
		{"dsn_env without value", "postgres {\n\tdsn_env\n}", PostgresStore{}, "dsn_env: one argument needed"},
		{"unknown option", "postgres " + dsn + " {\n\tpassword x\n}", PostgresStore{}, `unrecognized subdirective "password"`},
		{"revocation_notify off", "postgres " + dsn + " {\n\trevocation_notify off\n}", PostgresStore{DSN: dsn, RevocationNotify: new(false)}, ""},
		{"revocation_notify on", "postgres " + dsn + " {\n\trevocation_notify on\n}", PostgresStore{DSN: dsn, RevocationNotify: new(true)}, ""},
		{"revocation_notify bare", "postgres " + dsn + " {\n\trevocation_notify\n}", PostgresStore{DSN: dsn, RevocationNotify: new(true)}, ""},
		{"revocation_notify word", "postgres " + dsn + " {\n\trevocation_notify maybe\n}", PostgresStore{}, "neither on nor off"},
		{"revocation_notify twice", "postgres " + dsn + " {\n\trevocation_notify off\n\trevocation_notify off\n}", PostgresStore{}, "given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := new(PostgresStore)
			err := s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %v, want one containing %q", err, tt.err)
				}
				if err != nil && strings.Contains(err.Error(), "hunter2") {
					t.Errorf("the error %q shows the password", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (s.RevocationNotify == nil) != (tt.want.RevocationNotify == nil) ||
				(s.RevocationNotify != nil && *s.RevocationNotify != *tt.want.RevocationNotify) {
				t.Errorf("revocation_notify %v, want %v", s.RevocationNotify, tt.want.RevocationNotify)
			}
			if s.DSN != tt.want.DSN || s.DSNEnv != tt.want.DSNEnv || s.MaxConns != tt.want.MaxConns {
				t.Errorf("got dsn %q, dsn_env %q, max_conns %d; want %q, %q, %d",
					s.DSN, s.DSNEnv, s.MaxConns, tt.want.DSN, tt.want.DSNEnv, tt.want.MaxConns)
			}
		})
	}
}

// secretDSN is a DSN with a password, which no error or key may show.
const secretDSN = "postgres://gate:hunter2-Sekrit@db.example:6432/gatehouse?sslmode=require"

// provision provisions and validates s as Caddy does, returning the first
// error.
func provision(s *PostgresStore) error {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := s.Provision(ctx); err != nil {
		return err
	}
	return s.Validate()
}

// TestProvisionValidate: exactly one of dsn and dsn_env, a variable that
// is set, a DSN that parses and a pool size that is not negative; the
// errors never show the password.
func TestProvisionValidate(t *testing.T) {
	t.Setenv("GATEHOUSE_TEST_DSN", secretDSN)
	t.Setenv("GATEHOUSE_TEST_BAD_DSN", "postgres://gate:hunter2@Sekrit@db.example:x/gatehouse")
	t.Setenv("GATEHOUSE_TEST_EMPTY", "")
	for _, tt := range []struct {
		name string
		s    PostgresStore
		err  string
	}{
		{"DSN", PostgresStore{DSN: secretDSN}, ""},
		{"DSNEnv", PostgresStore{DSNEnv: "GATEHOUSE_TEST_DSN", MaxConns: 3}, ""},
		{"Neither", PostgresStore{}, "dsn or dsn_env is required"},
		{"Both", PostgresStore{DSN: secretDSN, DSNEnv: "GATEHOUSE_TEST_DSN"}, "exclusive"},
		{"EnvUnset", PostgresStore{DSNEnv: "GATEHOUSE_TEST_UNSET"}, "environment variable GATEHOUSE_TEST_UNSET is not set"},
		{"EnvEmpty", PostgresStore{DSNEnv: "GATEHOUSE_TEST_EMPTY"}, "environment variable GATEHOUSE_TEST_EMPTY is not set"},
		{"DSNInEnvField", PostgresStore{DSNEnv: secretDSN}, "dsn_env does not hold the name of an environment variable"},
		{"BadDSN", PostgresStore{DSN: "postgres://gate:hunter2@Sekrit@db.example:x/gatehouse"}, "invalid DSN"},
		{"BadDSNEnv", PostgresStore{DSNEnv: "GATEHOUSE_TEST_BAD_DSN"}, "invalid DSN"},
		{"NegativeMaxConns", PostgresStore{DSN: secretDSN, MaxConns: -1}, "max_conns -1 is negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			err := provision(&s)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want one containing %q", err, tt.err)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "Sekrit") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

// TestStoreKey: the key names the database, never the password, and
// differs when the DSN does (a new password opens a new pool on reload).
func TestStoreKey(t *testing.T) {
	key := func(dsn string) string {
		t.Helper()
		s := &PostgresStore{DSN: dsn}
		if err := provision(s); err != nil {
			t.Fatal(err)
		}
		return s.StoreKey()
	}
	k := key(secretDSN)
	if !strings.HasPrefix(k, "postgres:gate@db.example:6432/gatehouse#") {
		t.Errorf("key %q does not name the database", k)
	}
	if strings.Contains(k, "hunter2") || strings.Contains(k, "Sekrit") {
		t.Errorf("key %q shows the password", k)
	}
	if key(secretDSN) != k {
		t.Error("the same DSN gives another key")
	}
	if key(strings.Replace(secretDSN, "Sekrit", "Sekret", 1)) == k {
		t.Error("a DSN with another password gives the same key")
	}
	off := &PostgresStore{DSN: secretDSN, RevocationNotify: new(false)}
	if err := provision(off); err != nil {
		t.Fatal(err)
	}
	if off.StoreKey() == k {
		t.Error("revocation_notify off gives the same key as on: a reload would keep the store with notices")
	}
}

// TestOpenStore opens a store on a fresh database through the module, its
// DSN in an environment variable.
func TestOpenStore(t *testing.T) {
	t.Setenv("GATEHOUSE_TEST_DSN", pgtest.FreshDatabase(t))
	s := &PostgresStore{DSNEnv: "GATEHOUSE_TEST_DSN", MaxConns: 2}
	if err := provision(s); err != nil {
		t.Fatal(err)
	}
	st, err := s.OpenStore(t.Context())
	if err != nil {
		t.Fatalf("OpenStore: %v", err)
	}
	defer st.Close()
	got, err := st.Secret(t.Context(), "s", func() ([]byte, error) { return []byte("v"), nil })
	if err != nil || string(got) != "v" {
		t.Errorf("Secret: %q, %v", got, err)
	}
}

// TestAppOnPostgres runs the gatehouse app on a postgres store in-process:
// the store opens through the pool, the identity server keeps its signing
// key and secrets in PostgreSQL, and a second configuration with the same
// store (as a reload) finds them there.
func TestAppOnPostgres(t *testing.T) {
	dsn := pgtest.FreshDatabase(t)
	t.Setenv("GATEHOUSE_TEST_DSN", dsn)
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	load := func(audience string) {
		t.Helper()
		cfg, err := json.Marshal(map[string]any{
			"admin":   map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
			"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}},
			"apps": map[string]any{"gatehouse": map[string]any{
				"issuer":   "http://127.0.0.1:1",
				"audience": audience,
				"store":    map[string]any{"backend": "postgres", "dsn_env": "GATEHOUSE_TEST_DSN", "max_conns": 4},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := caddy.Load(cfg, true); err != nil {
			t.Fatalf("loading a configuration with a postgres store: %v", err)
		}
	}
	load("first")
	t.Cleanup(func() { caddy.Stop() })
	keys := countRows(t, dsn, "signing_keys")
	if keys == 0 {
		t.Fatal("the identity server stored no signing key in PostgreSQL")
	}
	load("second") // a reload: the pool keeps the store open across it
	if n := countRows(t, dsn, "signing_keys"); n != keys {
		t.Errorf("%d signing keys after the reload, want the %d there were", n, keys)
	}
}

// countRows counts the rows of table in the database dsn names.
func countRows(t *testing.T, dsn, table string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	// The table name is a constant of the test, quoted as an identifier.
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
