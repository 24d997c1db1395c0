package caddymodule

import (
	"encoding/json"
	"fmt"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
)

// parseClient parses `client <id> { ... }`.
func parseClient(d *caddyfile.Dispenser) (Client, error) {
	var c Client
	var err error
	if c.ID, err = cfutil.OneArg(d); err != nil {
		return c, err
	}
	once := cfutil.NewOnceSet(fmt.Sprintf("client %q: ", c.ID),
		"secret_sha256", "grant_types", "scopes", "default_scopes", "allowed_origins", "redirect_uris",
		"post_logout_redirect_uris", "entitlements")
	err = cfutil.ParseBlock(d, once, func(name string) (err error) {
		switch name {
		case "name":
			c.Name, err = cfutil.OneArg(d)
		case "public":
			c.Public, err = cfutil.Flag(d)
		case "secret_sha256":
			err = cfutil.AppendArgs(d, &c.SecretSHA256)
		case "grant_types":
			err = cfutil.AppendArgs(d, &c.GrantTypes)
		case "scopes":
			err = cfutil.AppendArgs(d, &c.Scopes)
		case "default_scopes":
			err = cfutil.AppendArgs(d, &c.DefaultScopes)
		case "entitlements":
			err = cfutil.AppendArgs(d, &c.Entitlements)
		case "access_token_lifetime":
			c.AccessTokenLifetime, err = cfutil.DurationArg(d)
		case "refresh_token":
			c.RefreshToken, err = parseRefreshToken(d)
		case "allowed_origins":
			err = cfutil.AppendArgs(d, &c.AllowedOrigins)
		case "redirect_uris":
			err = cfutil.AppendArgs(d, &c.RedirectURIs)
		case "post_logout_redirect_uris":
			err = cfutil.AppendArgs(d, &c.PostLogoutRedirectURIs)
		case "frontchannel_logout_uri":
			c.FrontchannelLogoutURI, err = cfutil.OneArg(d)
		case "frontchannel_logout_session_required":
			c.FrontchannelLogoutSessionRequired, err = cfutil.Flag(d)
		case "backchannel_logout_uri":
			c.BackchannelLogoutURI, err = cfutil.OneArg(d)
		case "logout_revokes_refresh":
			c.LogoutRevokesRefresh, err = cfutil.Flag(d)
		case "introspect":
			c.Introspect, err = cfutil.Flag(d)
		case "require_consent":
			c.RequireConsent, err = cfutil.Flag(d)
		case "allow_plain_pkce":
			c.AllowPlainPKCE, err = cfutil.Flag(d)
		case "allow_http_redirect":
			c.AllowHTTPRedirect, err = cfutil.Flag(d)
		case "jwks":
			c.JWKS, err = parseJWKS(d)
		case "access_token_signing_alg":
			c.AccessTokenSigningAlg, err = cfutil.OneArg(d)
		case "id_token_signed_response_alg":
			c.IDTokenSignedResponseAlg, err = cfutil.OneArg(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	return c, err
}

// parseJWKS parses `jwks <json>`: one argument holding a JSON object.
func parseJWKS(d *caddyfile.Dispenser) (json.RawMessage, error) {
	v, err := cfutil.OneArg(d)
	if err != nil {
		return nil, err
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal([]byte(v), &set); err != nil || set.Keys == nil {
		return nil, d.Errf("jwks: not a JWK Set (a JSON object with keys): %v", err)
	}
	return json.RawMessage(v), nil
}

// parseRefreshToken parses `refresh_token { ... }`.
func parseRefreshToken(d *caddyfile.Dispenser) (*RefreshToken, error) {
	if err := cfutil.NoArgs(d); err != nil {
		return nil, err
	}
	r := new(RefreshToken)
	err := cfutil.ParseBlock(d, cfutil.NewOnceSet("refresh_token: "), func(name string) (err error) {
		switch name {
		case "grace":
			r.Grace, err = cfutil.DurationArg(d)
		case "sliding_lifetime":
			r.SlidingLifetime, err = cfutil.DurationArg(d)
		case "absolute_lifetime":
			r.AbsoluteLifetime, err = cfutil.DurationArg(d)
		case "max_per_user":
			r.MaxPerUser, err = cfutil.PositiveIntArg(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	return r, err
}
