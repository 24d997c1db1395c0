package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/caddyserver/caddy/v2"

	// Caddy's standard modules, as cmd/gatehouse has them, and ours.
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/gatehouse/gatehouse"

	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/users"
)

// Paths served by the benchmark's Caddy.
const (
	tokenPath    = "/connect/token"
	baselinePath = "/baseline"
)

// Names of the benchmark's clients, user and scopes.
const (
	serviceID   = "bench-service" // confidential: client_credentials, RS256
	es256ID     = "bench-es256"   // the same with ES256 access tokens
	eddsaID     = "bench-eddsa"   // the same with EdDSA access tokens
	appID       = "bench-app"     // public: password, refresh_token
	username    = "bench"
	marketScope = "Service/Market"
	userScopes  = "offline_access " + marketScope
)

// server is the running Caddy with the credentials of its clients and user.
type server struct {
	base          string // http://127.0.0.1:port
	serviceSecret string
	password      string
	logPath       string
}

// obj is a JSON object of the Caddy configuration.
type obj = map[string]any

// startServer writes a users file into dir and loads a Caddy configuration
// serving the gatehouse app and a static baseline route on a free loopback
// port, with its SQLite store and Caddy's storage inside dir.
func startServer(dir string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &server{
		base:          fmt.Sprintf("http://127.0.0.1:%d", port),
		serviceSecret: randomHex(32),
		password:      randomHex(16),
		logPath:       filepath.Join(dir, "caddy.log"),
	}
	usersPath := filepath.Join(dir, "users.json")
	if err := writeUsers(usersPath, s.password); err != nil {
		return nil, err
	}
	secretSum := sha256.Sum256([]byte(s.serviceSecret))
	cfg := obj{
		"admin":   obj{"disabled": true, "config": obj{"persist": false}},
		"storage": obj{"module": "file_system", "root": filepath.Join(dir, "caddy")},
		// Quiet: Caddy's own errors on stderr; the identity server's
		// warnings and errors (never a per-token audit line) into a file
		// that checkErrors shows when a request failed.
		"logging": obj{"logs": obj{
			"default": obj{"level": "ERROR", "exclude": []string{"gatehouse"}},
			"gatehouse": obj{
				"level":   "WARN",
				"include": []string{"gatehouse"},
				"writer":  obj{"output": "file", "filename": s.logPath, "roll": false},
			},
		}},
		"apps": obj{
			"gatehouse": obj{
				"issuer":       s.base,
				"users_file":   usersPath,
				"store":        obj{"backend": "sqlite", "path": filepath.Join(dir, "gatehouse.db")},
				"signing_keys": obj{"algorithms": []string{"RS256", "ES256", "EdDSA"}},
				"clients": []obj{{
					"id":            serviceID,
					"secret_sha256": []string{hex.EncodeToString(secretSum[:])},
					"grant_types":   []string{oauth.GrantClientCredentials},
					"scopes":        []string{marketScope},
				}, {
					"id":                       es256ID,
					"secret_sha256":            []string{hex.EncodeToString(secretSum[:])},
					"grant_types":              []string{oauth.GrantClientCredentials},
					"scopes":                   []string{marketScope},
					"access_token_signing_alg": "ES256",
				}, {
					"id":                       eddsaID,
					"secret_sha256":            []string{hex.EncodeToString(secretSum[:])},
					"grant_types":              []string{oauth.GrantClientCredentials},
					"scopes":                   []string{marketScope},
					"access_token_signing_alg": "EdDSA",
				}, {
					"id":          appID,
					"public":      true,
					"grant_types": []string{oauth.GrantPassword, oauth.GrantRefreshToken},
					"scopes":      []string{oauth.ScopeOfflineAccess, marketScope},
				}},
			},
			"http": obj{"servers": obj{"bench": obj{
				"listen":          []string{fmt.Sprintf("127.0.0.1:%d", port)},
				"protocols":       []string{"h1"},
				"automatic_https": obj{"disable": true},
				"routes": []obj{{
					"match": []obj{{"path": []string{baselinePath}}},
					"handle": []obj{{
						"handler":     "static_response",
						"status_code": 200,
						"headers":     obj{"Content-Type": []string{"application/json"}},
						"body":        baselineBody,
					}},
				}, {
					"handle": []obj{{"handler": "gatehouse_identity"}},
				}},
			}}},
		},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding caddy config: %w", err)
	}
	if err := caddy.Load(cfgJSON, true); err != nil {
		return nil, fmt.Errorf("loading caddy config: %w", err)
	}
	return s, nil
}

// stop stops Caddy, which closes the store.
func (s *server) stop() {
	if err := caddy.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "tokenbench: stopping caddy:", err)
	}
}

// baselineBody is the static route's answer: shaped and sized like a token
// response, so the baseline carries the same bytes as the token endpoint.
var baselineBody = func() string {
	b, _ := json.Marshal(obj{
		"access_token": strings.Repeat("x", 760), // a 2048-bit RS256 access token's length
		"expires_in":   3600, "token_type": "Bearer", "scope": marketScope,
	})
	return string(b)
}()

// writeUsers writes a users file with the one benchmark user.
func writeUsers(path, password string) error {
	hash, err := users.HashPassword(password)
	if err != nil {
		return fmt.Errorf("hashing the bench user's password: %w", err)
	}
	data, err := json.Marshal(users.File{Users: []users.FileUser{{
		Username: username, Subject: "bench-subject-0001", PasswordHash: hash,
		Scopes: []string{oauth.ScopeOfflineAccess, marketScope},
	}}})
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing users file: %w", err)
	}
	return nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// randomHex returns n random bytes as hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}
