// Package demobackend is the demo's market-data backend as a Caddy handler
// (http.handlers.gatehouse_demo_backend), so that the one command of the
// README starts the whole demo: Caddyfile.example serves it on a loopback
// site of its own, behind the message gateway.
//
// DEMO-ONLY: the backend trusts the identity headers the gateway sets and
// checks nothing itself (see examples/marketdata). Never expose it.
package demobackend

import (
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
	"github.com/gatehouse/gatehouse/examples/marketdata"
)

func init() {
	caddy.RegisterModule(Handler{})
	httpcaddyfile.RegisterHandlerDirective("gatehouse_demo_backend", func(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
		handler := new(Handler)
		err := handler.UnmarshalCaddyfile(h.Dispenser)
		return handler, err
	})
	httpcaddyfile.RegisterDirectiveOrder("gatehouse_demo_backend", httpcaddyfile.Before, "reverse_proxy")
}

// Handler serves the demo market-data backend (DEMO-ONLY). No options.
type Handler struct {
	srv *marketdata.Server
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.gatehouse_demo_backend",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision starts the backend.
func (h *Handler) Provision(ctx caddy.Context) error {
	srv, err := marketdata.New(marketdata.Config{Logger: ctx.Logger()})
	if err != nil {
		return fmt.Errorf("gatehouse_demo_backend: %w", err)
	}
	h.srv = srv
	return nil
}

// ServeHTTP serves the backend.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	h.srv.ServeHTTP(w, r)
	return nil
}

// reloadGrace is how long the backend's connections outlive a config
// reload: longer than the gateway's default reload_delay, so that the
// gateway, not the backend, decides when live sockets close (1012).
const reloadGrace = time.Minute

// Cleanup closes the backend's connections: at once when the process
// exits, after reloadGrace on a config reload.
func (h *Handler) Cleanup() error {
	if h.srv == nil {
		return nil
	}
	if caddy.Exiting() {
		return h.srv.Close()
	}
	srv := h.srv
	time.AfterFunc(reloadGrace, func() { _ = srv.Close() })
	return nil
}

// UnmarshalCaddyfile sets up the handler. Syntax:
//
//	gatehouse_demo_backend
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if err := cfutil.NoArgs(d); err != nil {
		return err
	}
	return cfutil.ParseBlock(d, cfutil.NewOnceSet("gatehouse_demo_backend: "), func(string) error { return cfutil.Unrecognized(d) })
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ caddyfile.Unmarshaler       = (*Handler)(nil)
)
