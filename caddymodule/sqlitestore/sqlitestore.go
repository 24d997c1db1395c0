package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

func init() {
	caddy.RegisterModule(SQLiteStore{})
}

// SQLiteStore keeps the gatehouse store in an embedded SQLite database: the
// default, for a single instance (or several processes on one host sharing
// the file).
type SQLiteStore struct {
	// Path is the database file, relative to the working directory. It and
	// its directory are created when missing. Default
	// "gatehouse/gatehouse.db" in Caddy's data directory
	// ($XDG_DATA_HOME/caddy, else ~/.local/share/caddy on Linux). The file
	// holds signing keys and password hashes: keep it private (it is
	// created 0600, its directory 0700).
	Path string `json:"path,omitempty"`

	abs string
}

// CaddyModule returns the Caddy module information.
func (SQLiteStore) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gatehouse.stores.sqlite",
		New: func() caddy.Module { return new(SQLiteStore) },
	}
}

// Provision fills the default path and makes it absolute.
func (s *SQLiteStore) Provision(caddy.Context) error {
	if s.Path == "" {
		s.Path = DefaultPath()
	}
	abs, err := filepath.Abs(s.Path)
	if err != nil {
		return fmt.Errorf("sqlite store path %q: %w", s.Path, err)
	}
	s.abs = abs
	return nil
}

// DefaultPath is the default database file of the sqlite store.
func DefaultPath() string {
	return filepath.Join(caddy.AppDataDir(), "gatehouse", "gatehouse.db")
}

// StoreKey identifies the database file.
func (s *SQLiteStore) StoreKey() string { return "sqlite:" + s.abs }

// OpenStore opens the database.
func (s *SQLiteStore) OpenStore(ctx context.Context) (store.Store, error) {
	return sqlite.Open(ctx, s.abs)
}

// StoreStatus reads the database's schema version without changing anything (no file
// is created), for `validate`.
func (s *SQLiteStore) StoreStatus(ctx context.Context) (caddymodule.StoreStatus, error) {
	absent, current, latest, err := sqlite.Status(ctx, s.abs)
	return caddymodule.StoreStatus{Absent: absent, Current: current, Latest: latest}, err
}

// UnmarshalCaddyfile sets up the store from Caddyfile tokens: the
// arguments of the gatehouse option's `store sqlite` line. Syntax:
//
//	sqlite [<path>]
//
// or
//
//	sqlite {
//		path <path>
//	}
func (s *SQLiteStore) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the backend name
	once := cfutil.NewOnceSet("sqlite store: ")
	if d.NextArg() {
		s.Path = d.Val()
		if err := cfutil.NoArgs(d); err != nil {
			return err
		}
		_ = once.Check(d, "path") // cannot fail; a path subdirective now would be the second
	}
	return cfutil.ParseBlock(d, once, func(name string) (err error) {
		switch name {
		case "path":
			s.Path, err = cfutil.OneArg(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
}

// Interface guards
var (
	_ caddymodule.StoreOpener = (*SQLiteStore)(nil)
	_ caddy.Provisioner       = (*SQLiteStore)(nil)
	_ caddyfile.Unmarshaler   = (*SQLiteStore)(nil)
)
