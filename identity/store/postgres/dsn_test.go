package postgres_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatehouse/gatehouse/identity/store/postgres"
	"github.com/gatehouse/gatehouse/identity/store/postgres/pgtest"
	"github.com/gatehouse/gatehouse/identity/store/storetest"
)

// password is the password of the DSNs of these tests; no error or log may
// show it, or a part of it.
const password = "hunter2-Sekrit"

// leaks reports whether text shows password or a recognisable part of it.
func leaks(text string) bool {
	return strings.Contains(text, "hunter2") || strings.Contains(text, "Sekrit")
}

// TestParseDSNErrorsHideTheDSN: a DSN that does not parse, whatever is
// wrong with it, gives an error that quotes none of it, for pgx's parse
// errors quote it (masking the password as best they can) and may wrap a
// net/url error that quotes all of it.
func TestParseDSNErrorsHideTheDSN(t *testing.T) {
	for _, tt := range []struct{ name, dsn string }{
		{"URLBadPort", "postgres://gate:" + password + "@db.example:port/gatehouse"},
		{"URLBadEscape", "postgres://gate:hunter2%zzSekrit@db.example/gatehouse"},
		{"URLUnencodedAt", "postgres://gate:hunter2@Sekrit@db.example:x/gatehouse"},
		{"URLBadSSLMode", "postgres://gate:" + password + "@db.example/gatehouse?sslmode=sometimes"},
		{"URLBadPoolSetting", "postgres://gate:" + password + "@db.example/gatehouse?pool_max_conns=many"},
		{"KeyValueBadSSLMode", "host=db.example user=gate password=" + password + " sslmode=sometimes"},
		{"KeyValueUnterminated", "host=db.example user=gate password='" + password},
		{"KeyValueBadPort", "host=db.example port=x user=gate password=" + password},
		{"Empty", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := postgres.ParseDSN(tt.dsn)
			if err == nil {
				t.Fatalf("ParseDSN succeeded")
			}
			if leaks(err.Error()) {
				t.Errorf("ParseDSN error shows the password: %v", err)
			}
			s, err := postgres.Open(t.Context(), postgres.Config{DSN: tt.dsn})
			if err == nil {
				s.Close()
				t.Fatalf("Open succeeded")
			}
			if leaks(err.Error()) {
				t.Errorf("Open error shows the password: %v", err)
			}
		})
	}
}

// TestParseDSNTarget: what may be logged of a DSN is where it leads and
// who connects.
func TestParseDSNTarget(t *testing.T) {
	for _, dsn := range []string{
		"postgres://gate:" + password + "@db.example:6432/gatehouse?sslmode=require",
		"host=db.example port=6432 dbname=gatehouse user=gate password=" + password + " sslmode=require",
	} {
		target, err := postgres.ParseDSN(dsn)
		if err != nil {
			t.Fatalf("ParseDSN: %v", err)
		}
		want := postgres.Target{Host: "db.example", Port: 6432, Database: "gatehouse", User: "gate"}
		if target != want {
			t.Errorf("ParseDSN: %+v, want %+v", target, want)
		}
		if got := target.String(); got != "gate@db.example:6432/gatehouse" || leaks(got) {
			t.Errorf("Target.String() = %q", got)
		}
	}
}

// TestConnectErrorsHideThePassword: a store that cannot connect, because
// nothing listens or the database is missing, says so without the
// password.
func TestConnectErrorsHideThePassword(t *testing.T) {
	dsns := map[string]string{
		"NothingListens": "postgres://gate:" + password + "@127.0.0.1:1/gatehouse?sslmode=disable&connect_timeout=5",
	}
	if server := serverWithPassword(t, "no_such_database"); server != "" {
		dsns["NoSuchDatabase"] = server
	}
	for name, dsn := range dsns {
		t.Run(name, func(t *testing.T) {
			s, err := postgres.Open(storetest.Context(t), postgres.Config{DSN: dsn})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if leaks(err.Error()) || leaks(fmt.Sprintf("%+v", err)) {
				t.Errorf("Open error shows the password: %v", err)
			}
			if !strings.Contains(err.Error(), "connecting") {
				t.Errorf("Open error %q does not say it could not connect", err)
			}
		})
	}
}

// TestLogsHideThePassword: a store opened with a password in its DSN logs
// where it connected, and never the password.
func TestLogsHideThePassword(t *testing.T) {
	dsn := withPassword(t, pgtest.FreshDatabase(t))
	core, logs := observer.New(zap.DebugLevel)
	s, err := postgres.Open(storetest.Context(t), postgres.Config{DSN: dsn, Logger: zap.New(core)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if logs.Len() == 0 {
		t.Fatal("Open logged nothing")
	}
	for _, e := range logs.All() {
		enc := zapcore.NewMapObjectEncoder()
		for _, f := range e.Context {
			f.AddTo(enc)
		}
		if text := fmt.Sprint(e.Message, enc.Fields); leaks(text) {
			t.Errorf("log entry shows the password: %s", text)
		}
	}
	opened := logs.FilterMessage("postgres store opened").All()
	if len(opened) != 1 {
		t.Fatalf("%d \"postgres store opened\" entries, want 1", len(opened))
	}
	fields := opened[0].ContextMap()
	for _, k := range []string{"host", "port", "database", "user"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("\"postgres store opened\" has no %s field: %v", k, fields)
		}
	}
}

// serverWithPassword is the test server's DSN (its database replaced by
// database unless that is empty) with password set: the test server
// trusts loopback, so the password is sent nowhere and refused by no one.
// It is "" when there is no test server.
func serverWithPassword(t *testing.T, database string) string {
	dsn := pgtest.ServerDSNOrEmpty()
	if dsn == "" {
		return ""
	}
	if database != "" {
		dsn = pgtest.WithDatabase(t, dsn, database)
	}
	return withPassword(t, dsn)
}

// withPassword is the URL dsn with password set.
func withPassword(t *testing.T, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s is not a URL", pgtest.EnvVar)
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String()
}

// TestMaxConns: the pool holds at most MaxConns connections, 10 by
// default; a negative size is refused.
func TestMaxConns(t *testing.T) {
	dsn := pgtest.FreshDatabase(t)
	for _, tt := range []struct {
		set  int
		want int32
	}{{0, 10}, {3, 3}} {
		s, err := postgres.Open(storetest.Context(t), postgres.Config{DSN: dsn, MaxConns: tt.set})
		if err != nil {
			t.Fatalf("Open with MaxConns %d: %v", tt.set, err)
		}
		if got := postgres.MaxConns(s); got != tt.want {
			t.Errorf("Open with MaxConns %d: pool of %d, want %d", tt.set, got, tt.want)
		}
		s.Close()
	}
	if s, err := postgres.Open(storetest.Context(t), postgres.Config{DSN: dsn, MaxConns: -1}); err == nil {
		s.Close()
		t.Error("Open with MaxConns -1 succeeded")
	}
}
