package caddymodule

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("gatehouse_auth", parseAuthHandler)
	// Route protection runs where Caddy's own authentication does, before
	// the handlers that serve or proxy the request.
	httpcaddyfile.RegisterDirectiveOrder("gatehouse_auth", httpcaddyfile.After, "basic_auth")
}

// parseAuthHandler sets up the gatehouse_auth handler (see
// AuthHandler.UnmarshalCaddyfile).
func parseAuthHandler(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	handler := new(AuthHandler)
	err := handler.UnmarshalCaddyfile(h.Dispenser)
	return handler, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	gatehouse_auth [<matcher>] [<scope>...] {
//		scopes <scope>...
//		any_scope
//		realm <name>
//		acr_values <acr>...
//		header <name> <placeholder-template>...
//		strip_header <name>...
//		strip_authorization
//	}
//
// The scopes given as arguments and with `scopes` add up; all are required
// unless `any_scope` is set. `header`, `strip_header`, `scopes` and
// `acr_values` may be
// repeated; `header` once per name. The JSON fields of AuthHandler document
// each setting.
func (h *AuthHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	h.Scopes = append(h.Scopes, d.RemainingArgs()...)
	once := cfutil.NewOnceSet("gatehouse_auth: ", "scopes", "header", "strip_header", "acr_values")
	return cfutil.ParseBlock(d, once, func(name string) (err error) {
		switch name {
		case "scopes":
			err = cfutil.AppendArgs(d, &h.Scopes)
		case "any_scope":
			h.AnyScope, err = cfutil.Flag(d)
		case "realm":
			h.Realm, err = cfutil.OneArg(d)
		case "acr_values":
			err = cfutil.AppendArgs(d, &h.ACRValues)
		case "header":
			err = cfutil.HeaderTemplates(d, once, &h.Headers)
		case "strip_header":
			err = cfutil.AppendArgs(d, &h.StripHeaders)
		case "strip_authorization":
			h.StripAuthorization, err = cfutil.Flag(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
}

// Interface guards
var _ caddyfile.Unmarshaler = (*AuthHandler)(nil)
