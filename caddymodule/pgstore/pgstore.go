package pgstore

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/postgres"
)

func init() {
	caddy.RegisterModule(PostgresStore{})
}

// PostgresStore keeps the gatehouse store in a PostgreSQL database, which
// any number of gatehouse instances may share: they then share signing
// keys, server secrets, users, refresh tokens, revocations and failure
// counters, and a token issued by one is refreshed, introspected and
// revoked by any other. The first instance to start creates the schema
// (instances starting at once wait for one another); its user needs the
// right to create tables in the database's schema.
type PostgresStore struct {
	// DSN names the database, as a URL
	// (postgres://gatehouse:password@db.example:5432/gatehouse?sslmode=verify-full)
	// or as key=value settings (host=db.example dbname=gatehouse ...);
	// libpq's environment variables (PGHOST, PGPASSWORD, ...) and
	// ~/.pgpass fill in what it leaves out. Exactly one of dsn and dsn_env
	// is required. Risk: the DSN is part of the configuration, which
	// Caddy's admin API returns (GET /config/) and autosave.json keeps;
	// when it holds a password, use dsn_env, or PGPASSWORD / a .pgpass
	// file for the password alone. Gatehouse never logs it, nor quotes it
	// in errors.
	DSN string `json:"dsn,omitempty"`

	// DSNEnv names an environment variable that holds the DSN, read when
	// the configuration is loaded (so a reload reads it again). Exactly one
	// of dsn and dsn_env is required; the variable must be set and not
	// empty.
	DSNEnv string `json:"dsn_env,omitempty"`

	// MaxConns bounds the connection pool of this instance: at most this
	// many connections to PostgreSQL at once; requests beyond it wait for
	// a free connection. Default 10. The instances sharing the database
	// together need up to the sum of theirs, below the server's
	// max_connections.
	MaxConns int `json:"max_conns,omitempty"`

	// RevocationNotify makes a revocation on any instance reach every
	// other at once: each revocation NOTIFYs a channel in its own
	// transaction, and each instance holds one more connection (outside
	// max_conns) that LISTENs to it, so its verifiers read the revocation
	// and the message gateway rechecks its live sessions within
	// milliseconds. Off (false), the other instances find it by polling,
	// within 5 s (the verifier's refresh), and a live socket ends up to
	// the gateway's recheck_interval later: for engines that speak
	// PostgreSQL's protocol without LISTEN/NOTIFY (CockroachDB). Default
	// true.
	RevocationNotify *bool `json:"revocation_notify,omitempty"`

	dsn    string // the DSN in use, from dsn or dsn_env
	key    string // StoreKey
	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (PostgresStore) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gatehouse.stores.postgres",
		New: func() caddy.Module { return new(PostgresStore) },
	}
}

// Provision reads the DSN from dsn or from the environment variable
// dsn_env, and parses it. Which of the two is set is left to Validate when
// it is not exactly one.
func (s *PostgresStore) Provision(ctx caddy.Context) error {
	s.logger = ctx.Logger()
	switch {
	case s.DSN != "" && s.DSNEnv == "":
		s.dsn = s.DSN
	case s.DSNEnv != "" && s.DSN == "":
		dsn, err := cfutil.Env("postgres store: dsn_env", s.DSNEnv)
		if err != nil {
			return err
		}
		s.dsn = dsn
	default:
		return nil
	}
	target, err := postgres.ParseDSN(s.dsn)
	if err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	s.key = storeKey(target, s.dsn)
	if !s.notify() {
		// Another setting, another store: a reload that turns notices
		// off or on opens a new one.
		s.key += "#notify-off"
	}
	return nil
}

// notify reports whether revocation notices are on.
func (s *PostgresStore) notify() bool { return s.RevocationNotify == nil || *s.RevocationNotify }

// Validate checks that exactly one of dsn and dsn_env is set, and that
// max_conns is not negative.
func (s *PostgresStore) Validate() error {
	switch {
	case s.DSN == "" && s.DSNEnv == "":
		return errors.New("postgres store: dsn or dsn_env is required")
	case s.DSN != "" && s.DSNEnv != "":
		return errors.New("postgres store: dsn and dsn_env are exclusive: set one")
	case s.MaxConns < 0:
		return fmt.Errorf("postgres store: max_conns %d is negative", s.MaxConns)
	}
	return nil
}

// keyMAC keys the tag of StoreKey; random per process, so that a key seen
// in a log tells nothing of the DSN's password.
var keyMAC = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

// storeKey names the database and the exact DSN: user@host:port/database
// and a tag of the DSN that differs when anything in it, the password
// included, differs (so that a reload with a new password opens a new
// pool), without revealing it.
func storeKey(target postgres.Target, dsn string) string {
	mac := hmac.New(sha256.New, keyMAC)
	mac.Write([]byte(dsn))
	return "postgres:" + target.String() + "#" + hex.EncodeToString(mac.Sum(nil)[:8])
}

// StoreKey identifies the database and the DSN that reaches it, without
// the password.
func (s *PostgresStore) StoreKey() string { return s.key }

// OpenStore connects to the database and brings its schema up to date.
func (s *PostgresStore) OpenStore(ctx context.Context) (store.Store, error) {
	return postgres.Open(ctx, postgres.Config{DSN: s.dsn, MaxConns: s.MaxConns, DisableNotify: !s.notify(), Logger: s.logger})
}

// StoreStatus reads the database's schema version in a READ ONLY transaction, for
// `validate`.
func (s *PostgresStore) StoreStatus(ctx context.Context) (caddymodule.StoreStatus, error) {
	absent, current, latest, err := postgres.Status(ctx, s.dsn)
	return caddymodule.StoreStatus{Absent: absent, Current: current, Latest: latest}, err
}

// UnmarshalCaddyfile sets up the store from Caddyfile tokens: the
// arguments of the gatehouse option's `store postgres` line. Syntax:
//
//	postgres <dsn>
//
// or
//
//	postgres [<dsn>] {
//		dsn <dsn>
//		dsn_env <variable>
//		max_conns <n>
//		revocation_notify on|off
//	}
//
// with exactly one of the DSN (as the argument or the dsn subdirective)
// and dsn_env.
func (s *PostgresStore) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the backend name
	once := cfutil.NewOnceSet("postgres store: ")
	if d.CountRemainingArgs() > 0 {
		var err error
		if s.DSN, err = cfutil.SecretArg(d, "postgres store: the DSN"); err != nil {
			return err
		}
		_ = once.Check(d, "dsn") // cannot fail; a dsn subdirective now would be the second
	}
	err := cfutil.ParseBlock(d, once, func(name string) (err error) {
		switch name {
		case "dsn":
			s.DSN, err = cfutil.SecretArg(d, "postgres store: dsn")
		case "dsn_env":
			s.DSNEnv, err = cfutil.SecretArg(d, "postgres store: dsn_env")
		case "max_conns":
			s.MaxConns, err = cfutil.PositiveIntArg(d)
		case "revocation_notify":
			s.RevocationNotify, err = cfutil.OnOff(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case s.DSN == "" && s.DSNEnv == "":
		return d.Err("postgres store: a DSN (argument or dsn) or dsn_env is required")
	case s.DSN != "" && s.DSNEnv != "":
		return d.Err("postgres store: a DSN and dsn_env are exclusive: give one")
	}
	return nil
}

// Interface guards
var (
	_ caddymodule.StoreOpener = (*PostgresStore)(nil)
	_ caddy.Provisioner       = (*PostgresStore)(nil)
	_ caddy.Validator         = (*PostgresStore)(nil)
	_ caddyfile.Unmarshaler   = (*PostgresStore)(nil)
)
