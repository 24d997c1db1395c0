package caddymodule

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
	"github.com/gatehouse/gatehouse/identity"
)

func init() {
	caddy.RegisterModule(IdentityHandler{})
	httpcaddyfile.RegisterHandlerDirective("gatehouse_identity", parseIdentityHandler)
	// The identity endpoints are served before any authentication a site
	// adds, so that logging in needs no credentials but the user's own.
	httpcaddyfile.RegisterDirectiveOrder("gatehouse_identity", httpcaddyfile.Before, "basic_auth")
}

// IdentityHandler serves the identity server's endpoints (discovery, key
// set, /connect/*) from the gatehouse app, and passes every other request to
// the next handler. It needs the gatehouse app to be configured.
type IdentityHandler struct {
	srv *identity.Server
}

// CaddyModule returns the Caddy module information.
func (IdentityHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.gatehouse_identity",
		New: func() caddy.Module { return new(IdentityHandler) },
	}
}

// Provision finds the gatehouse app's identity server.
func (h *IdentityHandler) Provision(ctx caddy.Context) error {
	appIface, err := ctx.AppIfConfigured("gatehouse")
	if err != nil {
		return fmt.Errorf("gatehouse_identity needs the gatehouse app (the gatehouse global option): %w", err)
	}
	h.srv = appIface.(*App).Server()
	if h.srv == nil {
		return errors.New("gatehouse_identity: the gatehouse app has no identity server: it has no issuer, so it only verifies another issuer's tokens (remote-only mode)")
	}
	return nil
}

// ServeHTTP serves the request if its path is one of the identity server's
// endpoints, else calls next.
func (h *IdentityHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if ep := h.srv.Endpoint(r.URL.Path); ep != nil {
		ep.ServeHTTP(w, r)
		return nil
	}
	return next.ServeHTTP(w, r)
}

// parseIdentityHandler sets up the gatehouse_identity handler. Syntax:
//
//	gatehouse_identity
//
// It takes no arguments and no options; the gatehouse global option
// configures the identity server it serves.
func parseIdentityHandler(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	handler := new(IdentityHandler)
	err := handler.UnmarshalCaddyfile(h.Dispenser)
	return handler, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	gatehouse_identity
func (h *IdentityHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	if err := cfutil.NoArgs(d); err != nil {
		return err
	}
	return cfutil.ParseBlock(d, cfutil.NewOnceSet("gatehouse_identity: "), func(string) error {
		return cfutil.Unrecognized(d)
	})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*IdentityHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*IdentityHandler)(nil)
	_ caddyfile.Unmarshaler       = (*IdentityHandler)(nil)
)
