// Package consolehandler is the handler http.handlers.gatehouse_console:
// the Gatehouse console (package console), a page in the browser where a
// person signs in, watches quotes over the message gateway, runs queries
// and places orders after a step-up (docs/console.md).
package consolehandler

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
	"github.com/gatehouse/gatehouse/console"
)

func init() {
	caddy.RegisterModule(Handler{})
	httpcaddyfile.RegisterHandlerDirective("gatehouse_console", parseHandler)
	// The console serves its own paths and passes every other on, so it
	// may sit before the handlers that answer everything (respond).
	httpcaddyfile.RegisterDirectiveOrder("gatehouse_console", httpcaddyfile.Before, "respond")
}

// Handler serves the console under Base: the page at Base and at
// Base + "callback" (the sign-in's redirect URI), its script, style sheet
// and vendored oidc-client-ts under Base + "console/". Requests for any
// other path go to the next handler.
type Handler struct {
	// Issuer is the identity server's issuer URL. Default: the gatehouse
	// app's issuer.
	Issuer string `json:"issuer,omitempty"`
	// ClientID is the OAuth client the console signs in as: a public
	// client with the authorization_code and refresh_token grants, whose
	// redirect URIs include the console's callback (the page's origin +
	// Base + "callback"), whose post-logout redirect URIs include the
	// page's origin + Base, and whose allowed origins include the page's
	// origin when the identity server is elsewhere. Required.
	ClientID string `json:"client_id,omitempty"`
	// Scopes are asked at sign-in. Default: openid profile offline_access
	// Service/Market (offline_access for the refresh token that renews the
	// session).
	Scopes []string `json:"scopes,omitempty"`
	// StepUpScopes are asked besides Scopes before an order. Default: the
	// app's second-factor scopes (second_factor { scopes }), else
	// Service/Trading Service/OrderPad.
	StepUpScopes []string `json:"step_up_scopes,omitempty"`
	// Socket is the message gateway: a path on the page's origin or a
	// ws:// or wss:// URL. Default /ws.
	Socket string `json:"socket,omitempty"`
	// Subprotocol is the socket's WebSocket sub-protocol. Default
	// ServiceJson.
	Subprotocol string `json:"subprotocol,omitempty"`
	// Query is the query service's base: a path on the page's origin or an
	// http:// or https:// URL. Default /query.
	Query string `json:"query,omitempty"`
	// Base is the path the console is served under, starting and ending
	// with "/". Default "/".
	Base string `json:"base,omitempty"`
	// Symbols are on the quote board at sign-in, as CODE.VENUE. Default
	// BHP.ASX CBA.ASX.
	Symbols []string `json:"symbols,omitempty"`
	// Links are listed on the page besides the identity server's own.
	Links []Link `json:"links,omitempty"`
	// ConnectSrc are more origins (scheme://host[:port]) the page may
	// fetch from, besides its own, the issuer's and the query service's:
	// an identity server whose discovery document names endpoints on
	// other origins.
	ConnectSrc []string `json:"connect_src,omitempty"`

	h *console.Handler
}

// Link is a link on the console's page.
type Link struct {
	// Title is the link's text.
	Title string `json:"title"`
	// Href is a path or an http or https URL.
	Href string `json:"href"`
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.gatehouse_console",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision fills the defaults from the gatehouse app, when there is one,
// and builds the console.
func (h *Handler) Provision(ctx caddy.Context) error {
	cfg := console.Config{
		Issuer: h.Issuer, ClientID: h.ClientID, Scopes: h.Scopes, StepUpScopes: h.StepUpScopes,
		Socket: h.Socket, Subprotocol: h.Subprotocol, Query: h.Query, Base: h.Base, Symbols: h.Symbols,
		ConnectSrc: h.ConnectSrc,
	}
	for _, l := range h.Links {
		cfg.Links = append(cfg.Links, console.Link{Title: l.Title, Href: l.Href})
	}
	if cfg.Issuer == "" || len(cfg.StepUpScopes) == 0 {
		if appIface, err := ctx.AppIfConfigured("gatehouse"); err == nil {
			app := appIface.(*caddymodule.App)
			if cfg.Issuer == "" {
				cfg.Issuer = app.Issuer
			}
			if len(cfg.StepUpScopes) == 0 && app.SecondFactor != nil {
				cfg.StepUpScopes = app.SecondFactor.Scopes
			}
		}
	}
	if len(cfg.StepUpScopes) == 0 {
		cfg.StepUpScopes = []string{"Service/Trading", "Service/OrderPad"}
	}
	if cfg.Issuer == "" {
		return errors.New("gatehouse_console: no issuer (set issuer, or the gatehouse app's issuer)")
	}
	c, err := console.New(cfg)
	if err != nil {
		return fmt.Errorf("gatehouse_console: %w", err)
	}
	h.h = c
	return nil
}

// ServeHTTP serves the console's paths and passes the others to next.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if h.h.Serve(w, r) {
		return nil
	}
	return next.ServeHTTP(w, r)
}

func parseHandler(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	handler := new(Handler)
	err := handler.UnmarshalCaddyfile(h.Dispenser)
	return handler, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	gatehouse_console [<matcher>] {
//		client_id <id>                  # required
//		issuer <url>                    # default: the gatehouse app's
//		scopes <scope>...               # asked at sign-in
//		step_up_scopes <scope>...       # asked besides, before an order
//		socket <path|ws-url>            # default /ws
//		subprotocol <name>              # default ServiceJson
//		query <path|url>                # default /query
//		base <path>                     # default /
//		symbols <CODE.VENUE>...         # on the board at sign-in
//		link <title> <path|url>         # repeatable
//		connect_src <origin>...         # more origins the page may fetch from
//	}
//
// The JSON fields of Handler document each setting.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	if err := cfutil.NoArgs(d); err != nil {
		return err
	}
	once := cfutil.NewOnceSet("gatehouse_console: ", "link")
	return cfutil.ParseBlock(d, once, func(name string) (err error) {
		switch name {
		case "client_id":
			h.ClientID, err = cfutil.OneArg(d)
		case "issuer":
			h.Issuer, err = cfutil.OneArg(d)
		case "scopes":
			h.Scopes, err = cfutil.ListArgs(d)
		case "step_up_scopes":
			h.StepUpScopes, err = cfutil.ListArgs(d)
		case "socket":
			h.Socket, err = cfutil.OneArg(d)
		case "subprotocol":
			h.Subprotocol, err = cfutil.OneArg(d)
		case "query":
			h.Query, err = cfutil.OneArg(d)
		case "base":
			h.Base, err = cfutil.OneArg(d)
		case "symbols":
			h.Symbols, err = cfutil.ListArgs(d)
		case "connect_src":
			h.ConnectSrc, err = cfutil.ListArgs(d)
		case "link":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.ArgErr()
			}
			h.Links = append(h.Links, Link{Title: args[0], Href: args[1]})
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ caddyfile.Unmarshaler       = (*Handler)(nil)
)
