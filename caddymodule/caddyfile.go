package caddymodule

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("gatehouse", parseGlobalOption)
	httpcaddyfile.RegisterHandlerDirective("gatehouse_identity", parseIdentityHandler)
	// The identity endpoints are served before any authentication a site
	// adds, so that logging in needs no credentials but the user's own.
	httpcaddyfile.RegisterDirectiveOrder("gatehouse_identity", httpcaddyfile.Before, "basic_auth")
	httpcaddyfile.RegisterHandlerDirective("gatehouse_auth", parseAuthHandler)
	// Route protection runs where Caddy's own authentication does, before
	// the handlers that serve or proxy the request.
	httpcaddyfile.RegisterDirectiveOrder("gatehouse_auth", httpcaddyfile.After, "basic_auth")
}

// parseGlobalOption sets up the gatehouse app from the gatehouse global
// option. Syntax:
//
//	{
//		gatehouse {
//			issuer <url>
//			audience <name>
//			store sqlite [<path>]          # or a block: store sqlite { path <p> }
//			users_file <path>
//			access_token_lifetime <duration>
//			id_token_lifetime <duration>
//			refresh_token {
//				grace <duration>
//				sliding_lifetime <duration>
//				absolute_lifetime <duration>
//			}
//			uniform_error_status
//			hsts <value>
//			password_hash_concurrency <n>
//			client <id> {
//				name <text>
//				public
//				secret_sha256 <hex>...
//				grant_types <type>...
//				scopes <scope>...
//				default_scopes <scope>...
//				access_token_lifetime <duration>
//				refresh_token { ... }
//				allowed_origins <origin>...
//				redirect_uris <uri>...
//				introspect
//			}
//			api_resource <name> {
//				secret_sha256 <hex>...
//			}
//			lockout off                    # or a block:
//			lockout {
//				max_failures <n>
//				duration <duration>
//				window <duration>
//				throttle_after <n>
//				base_delay <duration>
//				max_delay <duration>
//			}
//			signing_keys {
//				period <duration>|off
//				announce <duration>
//				check_interval <duration>
//				bits <n>
//				encryption_key_env <variable>
//				encryption_key_file <path>
//			}
//			verifier {
//				issuer <url>
//				audience <name>
//				jwks_url <url>
//				algorithms <alg>...
//				types <type>...
//				leeway <duration>
//				cache_size <n>|off
//				check_revocations [on|off]
//			}
//		}
//	}
//
// Durations take Caddy's forms (90s, 1h, 15d). Subdirectives that take a
// list may be repeated, their arguments add up; the others may appear once.
// `client` and `api_resource` may appear once per id or name. Without an
// issuer the app only verifies another issuer's tokens (remote-only mode:
// a verifier with issuer and jwks_url). The JSON fields of App, Client,
// APIResource, Lockout, SigningKeys and VerifierConfig document each
// setting.
func parseGlobalOption(d *caddyfile.Dispenser, existing any) (any, error) {
	d.Next() // the option name
	if existing != nil {
		return nil, d.Err("gatehouse option given twice")
	}
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	app := new(App)
	once := newOnceSet("", "client", "api_resource")
	for d.NextBlock(0) {
		name := d.Val()
		if err := once.check(d, name); err != nil {
			return nil, err
		}
		var err error
		switch name {
		case "issuer":
			app.Issuer, err = oneArg(d)
		case "audience":
			app.Audience, err = oneArg(d)
		case "store":
			app.StoreRaw, err = parseStore(d)
		case "users_file":
			app.UsersFile, err = oneArg(d)
		case "access_token_lifetime":
			app.AccessTokenLifetime, err = durationArg(d)
		case "id_token_lifetime":
			app.IDTokenLifetime, err = durationArg(d)
		case "refresh_token":
			app.RefreshToken, err = parseRefreshToken(d)
		case "uniform_error_status":
			app.UniformErrorStatus, err = flag(d)
		case "hsts":
			app.HSTS, err = oneArg(d)
		case "password_hash_concurrency":
			app.PasswordHashConcurrency, err = positiveIntArg(d)
		case "client":
			var c Client
			c, err = parseClient(d)
			app.Clients = append(app.Clients, c)
		case "api_resource":
			var r APIResource
			r, err = parseAPIResource(d)
			app.APIResources = append(app.APIResources, r)
		case "lockout":
			app.Lockout, err = parseLockout(d)
		case "signing_keys":
			app.SigningKeys, err = parseSigningKeys(d)
		case "verifier":
			app.VerifierConfig, err = parseVerifier(d)
		default:
			return nil, d.Errf("unrecognized subdirective %q", name)
		}
		if err != nil {
			return nil, err
		}
	}
	return httpcaddyfile.App{Name: "gatehouse", Value: caddyconfig.JSON(app, nil)}, nil
}

// parseStore parses `store <backend> [<args>] [{ ... }]` into a module of
// the gatehouse.stores namespace.
func parseStore(d *caddyfile.Dispenser) ([]byte, error) {
	if !d.NextArg() {
		return nil, d.ArgErr()
	}
	backend := d.Val()
	unm, err := caddyfile.UnmarshalModule(d, "gatehouse.stores."+backend)
	if err != nil {
		return nil, err
	}
	return caddyconfig.JSONModuleObject(unm, "backend", backend, nil), nil
}

// parseClient parses `client <id> { ... }`.
func parseClient(d *caddyfile.Dispenser) (Client, error) {
	var c Client
	var err error
	if c.ID, err = oneArg(d); err != nil {
		return c, err
	}
	once := newOnceSet(fmt.Sprintf("client %q: ", c.ID),
		"secret_sha256", "grant_types", "scopes", "default_scopes", "allowed_origins", "redirect_uris")
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		if err := once.check(d, name); err != nil {
			return c, err
		}
		var list []string
		switch name {
		case "name":
			c.Name, err = oneArg(d)
		case "public":
			c.Public, err = flag(d)
		case "secret_sha256":
			list, err = listArgs(d)
			c.SecretSHA256 = append(c.SecretSHA256, list...)
		case "grant_types":
			list, err = listArgs(d)
			c.GrantTypes = append(c.GrantTypes, list...)
		case "scopes":
			list, err = listArgs(d)
			c.Scopes = append(c.Scopes, list...)
		case "default_scopes":
			list, err = listArgs(d)
			c.DefaultScopes = append(c.DefaultScopes, list...)
		case "access_token_lifetime":
			c.AccessTokenLifetime, err = durationArg(d)
		case "refresh_token":
			c.RefreshToken, err = parseRefreshToken(d)
		case "allowed_origins":
			list, err = listArgs(d)
			c.AllowedOrigins = append(c.AllowedOrigins, list...)
		case "redirect_uris":
			list, err = listArgs(d)
			c.RedirectURIs = append(c.RedirectURIs, list...)
		case "introspect":
			c.Introspect, err = flag(d)
		default:
			return c, d.Errf("unrecognized subdirective %q", name)
		}
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

// parseRefreshToken parses `refresh_token { ... }`.
func parseRefreshToken(d *caddyfile.Dispenser) (*RefreshToken, error) {
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	r := new(RefreshToken)
	err := parseBlock(d, newOnceSet("refresh_token: "), func(name string) (err error) {
		switch name {
		case "grace":
			r.Grace, err = durationArg(d)
		case "sliding_lifetime":
			r.SlidingLifetime, err = durationArg(d)
		case "absolute_lifetime":
			r.AbsoluteLifetime, err = durationArg(d)
		default:
			return d.Errf("unrecognized subdirective %q", name)
		}
		return err
	})
	return r, err
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
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(0) {
		return d.Errf("unrecognized subdirective %q", d.Val())
	}
	return nil
}

// UnmarshalCaddyfile sets up the store from Caddyfile tokens. Syntax:
//
//	sqlite [<path>]
//
// or
//
//	sqlite {
//		path <path>
//	}
func (s *SQLiteStore) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the backend name
	if d.NextArg() {
		s.Path = d.Val()
		if d.NextArg() {
			return d.ArgErr()
		}
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "path":
			if s.Path != "" {
				return d.Err("sqlite store: path given twice")
			}
			var err error
			if s.Path, err = oneArg(d); err != nil {
				return err
			}
		default:
			return d.Errf("unrecognized subdirective %q", d.Val())
		}
	}
	return nil
}

// oneArg reads the one argument of the current line.
func oneArg(d *caddyfile.Dispenser) (string, error) {
	if !d.NextArg() {
		return "", d.ArgErr()
	}
	v := d.Val()
	if d.NextArg() {
		return "", d.ArgErr()
	}
	return v, nil
}

// listArgs reads the one or more arguments of the current line.
func listArgs(d *caddyfile.Dispenser) ([]string, error) {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return nil, d.ArgErr()
	}
	return args, nil
}

// flag checks that the current line has no arguments, and returns true.
func flag(d *caddyfile.Dispenser) (bool, error) {
	if d.NextArg() {
		return false, d.ArgErr()
	}
	return true, nil
}

// durationArg reads the one duration argument of the current line.
func durationArg(d *caddyfile.Dispenser) (caddy.Duration, error) {
	v, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	dur, err := caddy.ParseDuration(v)
	if err != nil {
		return 0, d.Errf("bad duration %q: %v", v, err)
	}
	return caddy.Duration(dur), nil
}

// positiveIntArg reads the one positive integer argument of the current line.
func positiveIntArg(d *caddyfile.Dispenser) (int, error) {
	v, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, d.Errf("%q is not a positive integer", v)
	}
	return n, nil
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*IdentityHandler)(nil)
	_ caddyfile.Unmarshaler = (*SQLiteStore)(nil)
)

// onceSet refuses a subdirective given twice in one block; the names in
// repeatable may repeat (their arguments add up).
type onceSet struct {
	prefix     string
	repeatable []string
	seen       map[string]bool
}

func newOnceSet(prefix string, repeatable ...string) *onceSet {
	return &onceSet{prefix: prefix, repeatable: repeatable, seen: map[string]bool{}}
}

func (o *onceSet) check(d *caddyfile.Dispenser, name string) error {
	if slices.Contains(o.repeatable, name) {
		return nil
	}
	if o.seen[name] {
		return d.Errf("%s%s given twice", o.prefix, name)
	}
	o.seen[name] = true
	return nil
}

// parseBlock runs each subdirective of the block at the dispenser through
// once, then through parse.
func parseBlock(d *caddyfile.Dispenser, once *onceSet, parse func(name string) error) error {
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		if err := once.check(d, name); err != nil {
			return err
		}
		if err := parse(name); err != nil {
			return err
		}
	}
	return nil
}
