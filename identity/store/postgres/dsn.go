package postgres

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Target is what may be said of a database in logs and errors: where it
// is and who connects, never the password.
type Target struct {
	Host     string // the first host of the DSN (a name, an address or a socket directory)
	Port     uint16
	Database string
	User     string
}

// String is user@host:port/database.
func (t Target) String() string {
	return t.User + "@" + net.JoinHostPort(t.Host, strconv.Itoa(int(t.Port))) + "/" + t.Database
}

// ParseDSN parses a DSN as Open does (a postgres:// URL or key=value
// settings, with libpq's environment variables as defaults) and tells
// where it leads. Its error never holds the DSN's text.
func ParseDSN(dsn string) (Target, error) {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return Target{}, err
	}
	return targetOf(cfg), nil
}

// parseDSN parses dsn into a pool configuration. pgx's own parse errors
// quote the DSN with the password masked only as best it can, and may
// wrap a net/url error that holds the whole URL, so they are reworded
// here without the DSN's text.
func parseDSN(dsn string) (*pgxpool.Config, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("empty DSN")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	_, isParseErr := errors.AsType[*pgconn.ParseConfigError](err)
	switch {
	case err == nil:
		return cfg, nil
	case isParseErr:
		if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
			return nil, errors.New("invalid DSN: it does not parse as a postgres:// URL or one of its settings is invalid " +
				"(the DSN is not shown, as it may hold a password; characters such as @ : / ? # % in the user " +
				"name or password must be percent-encoded)")
		}
		return nil, errors.New("invalid DSN: it does not parse as key=value settings or one of its settings is invalid " +
			"(the DSN is not shown, as it may hold a password)")
	default:
		// pgxpool's own settings (pool_max_conns and the like): the error
		// names the setting and its value, not the DSN.
		return nil, fmt.Errorf("invalid DSN: %w", err)
	}
}

// targetOf is the loggable part of cfg.
func targetOf(cfg *pgxpool.Config) Target {
	c := cfg.ConnConfig
	return Target{Host: c.Host, Port: c.Port, Database: c.Database, User: c.User}
}

// scrubbed is an error whose text has had a password taken out; it still
// wraps the original for errors.Is and errors.As.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// scrub returns err with every occurrence of password in its text
// replaced: the drivers' connection errors name the user and database,
// not the password, and this makes sure of it.
func scrub(err error, password string) error {
	if err == nil || password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return &scrubbed{msg: strings.ReplaceAll(err.Error(), password, "xxxxx"), err: err}
}
