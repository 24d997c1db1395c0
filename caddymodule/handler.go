package caddymodule

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gatehouse/gatehouse/identity"
)

func init() {
	caddy.RegisterModule(IdentityHandler{})
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

// Interface guards
var (
	_ caddy.Provisioner           = (*IdentityHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*IdentityHandler)(nil)
)
