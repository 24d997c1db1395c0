// Package gatehouse is an auth gateway for market-data platforms, built as
// Caddy v2 modules: an OAuth 2.0 / OpenID Connect identity server, a guard
// for a WebSocket message service and a query service.
//
// Importing this package registers every Gatehouse module with Caddy, so
//
//	xcaddy build --with github.com/gatehouse/gatehouse
//
// builds a Caddy with Gatehouse in it. cmd/gatehouse is the same binary built
// with plain `go build`, and the demo's market-data backend besides
// (caddymodule/demobackend, DEMO-ONLY: it trusts whoever reaches it), which
// this package leaves out, so that no production build carries it. The code
// lives in the packages below this one: caddymodule holds the Caddy glue,
// identity and the others the core.
package gatehouse

// Registers the Caddy modules, Caddyfile directives and CLI commands: the
// root package and each of its sub-packages (as caddy-l4's imports.go does).
import (
	_ "github.com/gatehouse/gatehouse/caddymodule"
	_ "github.com/gatehouse/gatehouse/caddymodule/cli"
	_ "github.com/gatehouse/gatehouse/caddymodule/consolehandler"
	_ "github.com/gatehouse/gatehouse/caddymodule/pgstore"
	_ "github.com/gatehouse/gatehouse/caddymodule/queryhandler"
	_ "github.com/gatehouse/gatehouse/caddymodule/sqlitestore"
	_ "github.com/gatehouse/gatehouse/caddymodule/wshandler"
)
