//go:build linux

package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/users"
)

// Names of the benchmark's clients, user and scopes.
const (
	serviceID   = "bench-service" // confidential: client_credentials
	appID       = "bench-app"     // public: password, refresh_token
	username    = "bench"
	marketScope = "Service/Market"
	userScopes  = oauth.ScopeOfflineAccess + " " + marketScope
)

// store is where a deployment keeps its state.
type store struct {
	postgres bool   // else SQLite, in the first instance's data directory
	dsn      string // with postgres: the database
	notify   bool   // with postgres: revocation_notify
}

func (s store) String() string {
	switch {
	case !s.postgres:
		return "sqlite"
	case s.notify:
		return "postgres"
	default:
		return "postgres (notices off)"
	}
}

// deployment is one or more gatehouse processes on one store, with one
// issuer (the first one's URL, which a load balancer would answer on),
// each with its own port, data directory and demo backend behind its
// message gateway.
type deployment struct {
	store         store
	bases         []string // http://127.0.0.1:<port> of each instance
	procs         []*proc
	serviceSecret string
	password      string
}

// startDeployment starts n instances on st in a new directory under dir.
func startDeployment(dir, bin, name string, st store, n int) (*deployment, error) {
	d := &deployment{store: st, serviceSecret: randomHex(32), password: randomHex(16)}
	root := filepath.Join(dir, name)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	usersPath := filepath.Join(root, "users.json")
	if err := writeUsers(usersPath, d.password); err != nil {
		return nil, err
	}
	ports := make([]int, n)
	for i := range ports {
		var err error
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
		d.bases = append(d.bases, "http://127.0.0.1:"+strconv.Itoa(ports[i]))
	}
	for i := range n {
		backend, err := freePort()
		if err != nil {
			d.stop()
			return nil, err
		}
		idir := filepath.Join(root, "instance-"+strconv.Itoa(i))
		if err := os.MkdirAll(idir, 0o700); err != nil {
			d.stop()
			return nil, err
		}
		caddyfile := filepath.Join(idir, "Caddyfile")
		cfg := d.caddyfile(ports[i], backend, usersPath, filepath.Join(root, "gatehouse.db"))
		if err := os.WriteFile(caddyfile, []byte(cfg), 0o600); err != nil {
			d.stop()
			return nil, err
		}
		p, err := startGatehouse(name+"-"+strconv.Itoa(i), idir, bin, caddyfile, d.bases[i],
			[]string{"MULTIBENCH_DSN=" + st.dsn})
		if err != nil {
			d.stop()
			return nil, err
		}
		d.procs = append(d.procs, p)
	}
	return d, nil
}

// stop stops every instance.
func (d *deployment) stop() {
	for _, p := range d.procs {
		p.stop()
	}
	d.procs = nil
}

// caddyfile is an instance's configuration: quiet logs (errors only), no
// admin endpoint, the gatehouse app with the two clients, the identity
// endpoints and a message gateway in front of the demo backend on backend.
func (d *deployment) caddyfile(port, backend int, usersPath, sqlitePath string) string {
	storeLine := "store sqlite " + sqlitePath
	if d.store.postgres {
		notify := "on"
		if !d.store.notify {
			notify = "off"
		}
		storeLine = "store postgres {\n\t\t\tdsn_env MULTIBENCH_DSN\n\t\t\trevocation_notify " + notify + "\n\t\t}"
	}
	sum := sha256.Sum256([]byte(d.serviceSecret))
	return fmt.Sprintf(`{
	admin off
	persist_config off
	log {
		level ERROR
	}
	gatehouse {
		issuer %s
		users_file %s
		%s
		client %s {
			public
			grant_types password refresh_token
			scopes %s
		}
		client %s {
			secret_sha256 %s
			grant_types client_credentials
			scopes %s
		}
	}
}

http://127.0.0.1:%d {
	bind 127.0.0.1
	gatehouse_identity
	gatehouse_ws /ws {
		upstream ws://127.0.0.1:%d/
	}
}

http://127.0.0.1:%d {
	bind 127.0.0.1
	gatehouse_demo_backend
}
`, d.bases[0], usersPath, storeLine, appID, userScopes, serviceID, hex.EncodeToString(sum[:]), marketScope,
		port, backend, backend)
}

// writeUsers writes a users file with the one benchmark user.
func writeUsers(path, password string) error {
	hash, err := users.HashPassword(password)
	if err != nil {
		return fmt.Errorf("hashing the bench user's password: %w", err)
	}
	data, err := json.Marshal(users.File{Users: []users.FileUser{{
		Username: username, Subject: "bench-subject-0001", PasswordHash: hash,
		Scopes: strings.Fields(userScopes),
	}}})
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// createDatabase makes a fresh database on the server of dsn and returns
// its DSN and a function that drops it.
func createDatabase(ctx context.Context, dsn string) (string, func(), error) {
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: connecting: %w", err)
	}
	name := "multibench_" + randomHex(6)
	quoted := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+quoted); err != nil {
		admin.Close(ctx)
		return "", nil, err
	}
	drop := func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+quoted+" WITH (FORCE)")
		admin.Close(context.Background())
	}
	u, err := url.Parse(dsn)
	if err != nil {
		drop()
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}

// randomHex returns n random bytes as hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
