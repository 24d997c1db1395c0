package caddymodule

import (
	"net/http"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

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
//		header <name> <placeholder-template>...
//		strip_header <name>...
//		strip_authorization
//	}
//
// The scopes given as arguments and with `scopes` add up; all are required
// unless `any_scope` is set. `header`, `strip_header` and `scopes` may be
// repeated; `header` once per name. The JSON fields of AuthHandler document
// each setting.
func (h *AuthHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	h.Scopes = append(h.Scopes, d.RemainingArgs()...)
	once := newOnceSet("gatehouse_auth: ", "scopes", "header", "strip_header")
	for d.NextBlock(0) {
		name := d.Val()
		if err := once.check(d, name); err != nil {
			return err
		}
		var err error
		var list []string
		switch name {
		case "scopes":
			list, err = listArgs(d)
			h.Scopes = append(h.Scopes, list...)
		case "any_scope":
			h.AnyScope, err = flag(d)
		case "realm":
			h.Realm, err = oneArg(d)
		case "header":
			if list, err = listArgs(d); err != nil {
				return err
			}
			if len(list) < 2 {
				return d.ArgErr()
			}
			header := http.CanonicalHeaderKey(list[0])
			if _, dup := h.Headers[header]; dup {
				return d.Errf("gatehouse_auth: header %s given twice", header)
			}
			if h.Headers == nil {
				h.Headers = map[string][]string{}
			}
			h.Headers[header] = list[1:]
		case "strip_header":
			list, err = listArgs(d)
			h.StripHeaders = append(h.StripHeaders, list...)
		case "strip_authorization":
			h.StripAuthorization, err = flag(d)
		default:
			return d.Errf("unrecognized subdirective %q", name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Interface guards
var _ caddyfile.Unmarshaler = (*AuthHandler)(nil)
