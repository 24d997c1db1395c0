// Package demobackend is the demo's market-data backend as a Caddy handler
// (http.handlers.gatehouse_demo_backend), so that the one command of the
// README (docs/getting-started.md) starts the whole demo: Caddyfile.example serves it on a loopback
// site of its own, behind the message gateway.
//
// DEMO-ONLY: the backend trusts the identity headers the gateway sets and
// checks nothing itself (see examples/marketdata). Never expose it: it
// answers loopback addresses only, and the module's package (the root
// gatehouse package, what xcaddy builds) does not include it; cmd/gatehouse
// does, to run the demo.
package demobackend

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
	"github.com/gatehouse/gatehouse/examples/marketdata"
	"github.com/gatehouse/gatehouse/internal/contain"
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

// Handler serves the demo market-data backend (DEMO-ONLY): a WebSocket
// on any path, and at /stats (GET, not an upgrade) its live
// subscriptions per venue and topic kind as JSON, for tests and
// benchmarks.
type Handler struct {
	// TickInterval is how often the simulated prices move. Default 1s.
	TickInterval caddy.Duration `json:"tick_interval,omitempty"`
	// PingInterval is how often the backend pings each connection (the
	// gateway's backend leg). Default 30s.
	PingInterval caddy.Duration `json:"ping_interval,omitempty"`
	// IdleTimeout closes (1008) a connection silent this long, pongs
	// included. Default 60s; it must exceed ping_interval.
	IdleTimeout caddy.Duration `json:"idle_timeout,omitempty"`
	// MaxConnections bounds the live connections; an upgrade beyond it gets
	// 503. Default 1024.
	MaxConnections int `json:"max_connections,omitempty"`
	// Compression accepts permessage-deflate when the gateway offers it
	// (gatehouse_ws backend_compression): every message to the gateway is
	// then compressed, alone. Default false.
	Compression bool `json:"compression,omitempty"`

	srv    *marketdata.Server
	key    string // in backends
	logger *zap.Logger
}

// backends holds the running backends across config reloads, under their
// server's name and their configuration: a reload that leaves a backend as
// it was keeps it, with its connections (the gateway's backend legs), so
// that the gateway's sessions, which a reload keeps too, go on. One that
// changes it, or drops it, closes the old one's connections (Destruct).
var backends = caddy.NewUsagePool()

// pooled is a backend in backends.
type pooled struct {
	srv    *marketdata.Server
	logger *zap.Logger
}

// Destruct closes the backend's connections once no handler holds it: at
// once when the process exits, after reloadGrace on a config reload.
func (p *pooled) Destruct() error {
	if caddy.Exiting() {
		return p.srv.Close()
	}
	srv := p.srv
	contain.AfterFunc(p.logger, "demo.close", reloadGrace, func() { _ = srv.Close() })
	return nil
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.gatehouse_demo_backend",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision starts the backend, or takes the one the config before ran
// with the same configuration on the same server (see backends).
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	fixed, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("gatehouse_demo_backend: %w", err)
	}
	var server string
	if srv, ok := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server); ok && srv != nil {
		server = srv.Name()
	}
	key := "gatehouse_demo_backend/" + strconv.Quote(server) + "/" + string(fixed)
	v, _, err := backends.LoadOrNew(key, func() (caddy.Destructor, error) {
		srv, err := marketdata.New(marketdata.Config{Logger: h.logger, TickInterval: time.Duration(h.TickInterval),
			PingInterval: time.Duration(h.PingInterval), IdleTimeout: time.Duration(h.IdleTimeout), MaxConnections: h.MaxConnections,
			Compression: h.Compression})
		if err != nil {
			return nil, fmt.Errorf("gatehouse_demo_backend: %w", err)
		}
		return &pooled{srv: srv, logger: h.logger}, nil
	})
	if err != nil {
		return err
	}
	h.srv, h.key = v.(*pooled).srv, key
	return nil
}

// ServeHTTP serves the backend to this machine only: a request from any
// other address is refused (403), whatever the site's bind says, since the
// backend believes the identity headers it is sent.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	if !marketdata.FromLoopback(r.RemoteAddr) {
		http.Error(w, "the demo backend answers this machine only", http.StatusForbidden)
		return nil
	}
	h.srv.ServeHTTP(w, r)
	return nil
}

// reloadGrace is how long the connections of a backend that a config
// reload changed or dropped outlive it: longer than the gateway's default
// drain_window, so that the gateway, not the backend, decides when live
// sockets close (1012).
const reloadGrace = time.Minute

// Cleanup lets go of the backend; the last handler holding it closes it
// (pooled.Destruct).
func (h *Handler) Cleanup() error {
	if h.key == "" {
		return nil
	}
	_, err := backends.Delete(h.key)
	return err
}

// UnmarshalCaddyfile sets up the handler. Syntax:
//
//	gatehouse_demo_backend {
//		tick_interval <duration>
//		ping_interval <duration>
//		idle_timeout <duration>
//		max_connections <n>
//		compression                  # accept permessage-deflate, compress every message
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if err := cfutil.NoArgs(d); err != nil {
		return err
	}
	return cfutil.ParseBlock(d, cfutil.NewOnceSet("gatehouse_demo_backend: "), func(name string) error {
		var err error
		switch name {
		case "tick_interval":
			h.TickInterval, err = cfutil.DurationArg(d)
		case "ping_interval":
			h.PingInterval, err = cfutil.DurationArg(d)
		case "idle_timeout":
			h.IdleTimeout, err = cfutil.DurationArg(d)
		case "max_connections":
			h.MaxConnections, err = cfutil.PositiveIntArg(d)
		case "compression":
			h.Compression, err = cfutil.Flag(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ caddyfile.Unmarshaler       = (*Handler)(nil)
)
