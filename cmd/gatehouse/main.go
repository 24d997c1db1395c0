// Command gatehouse is Caddy with its standard modules and Gatehouse's
// modules, and Gatehouse's subcommands (`gatehouse user ...`,
// `gatehouse client secret`, `gatehouse keys list|rotate`) next to Caddy's
// own (run, reload, adapt, ...).
//
// It is the binary `xcaddy build --with github.com/gatehouse/gatehouse`
// builds, for those who prefer `go build ./cmd/gatehouse`, with the demo's
// market-data backend besides (http.handlers.gatehouse_demo_backend).
package main

import (
	"runtime/debug"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	// Every Gatehouse module and command: gatehouse.go holds the one list
	// of caddymodule and its sub-packages.
	_ "github.com/gatehouse/gatehouse"

	// The demo's market-data backend, which Caddyfile.example serves
	// (DEMO-ONLY): this binary runs the demo; an xcaddy build of the module
	// does not carry it.
	_ "github.com/gatehouse/gatehouse/caddymodule/demobackend"
)

func main() {
	caddy.CustomBinaryName = "gatehouse"
	if bi, ok := debug.ReadBuildInfo(); ok {
		caddy.CustomVersion = versionPrefix(bi)
	}
	caddycmd.Main()
}

// versionPrefix is what `gatehouse version` prints before Caddy's version:
// Gatehouse's own, as Go stamped it on the build (a tag such as v0.3.0 on
// a tagged checkout, else a pseudo-version of the commit, +dirty for
// uncommitted changes; (devel) when built without version control).
func versionPrefix(bi *debug.BuildInfo) string {
	return "gatehouse " + bi.Main.Version + ", Caddy"
}
