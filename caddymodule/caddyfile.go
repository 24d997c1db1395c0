package caddymodule

import (
	"fmt"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("gatehouse", parseGlobalOption)
}

// parseGlobalOption sets up the gatehouse app from the gatehouse global
// option. Syntax:
//
//	{
//		gatehouse {
//			issuer <url>
//			audience <name>
//			store sqlite [<path>]          # or a block: store sqlite { path <p> }
//			store postgres <dsn>           # or a block: store postgres { dsn_env <variable>; max_conns <n>; revocation_notify on|off }
//			users_file <path>
//			min_password_length <n>
//			access_token_lifetime <duration>
//			id_token_lifetime <duration>
//			code_lifetime <duration>
//			device_code_lifetime <duration>
//			device_poll_interval <duration>
//			session_idle_timeout <duration>
//			session_lifetime <duration>
//			refresh_token {
//				grace <duration>
//				sliding_lifetime <duration>
//				absolute_lifetime <duration>
//				max_per_user <n>
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
//				post_logout_redirect_uris <uri>...
//				frontchannel_logout_uri <uri>
//				frontchannel_logout_session_required
//				backchannel_logout_uri <uri>
//				logout_revokes_refresh
//				introspect
//				require_consent
//				allow_plain_pkce
//				allow_http_redirect
//				jwks <json>                # a JWK Set, e.g. in backquotes
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
//			second_factor {
//				scopes <scope>...
//				totp_issuer <name>
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
//			audit {                        # the tamper-evident audit; absent: off
//				checkpoint_interval <duration>
//				on_failure continue|refuse
//				instance <name>
//				key_period <duration>|off
//				flush_delay <duration>|off
//				encryption_key_env <variable>
//				encryption_key_file <path>
//			}
//		}
//	}
//
// Durations take Caddy's forms (90s, 1h, 15d). Subdirectives that take a
// list may be repeated, their arguments add up; the others may appear once.
// `client` and `api_resource` may appear once per id or name. Without an
// issuer the app only verifies another issuer's tokens (remote-only mode:
// a verifier with issuer and jwks_url). The JSON fields of App, Client,
// APIResource, Lockout, SigningKeys, VerifierConfig and Audit document
// each setting.
func parseGlobalOption(d *caddyfile.Dispenser, existing any) (any, error) {
	d.Next() // the option name
	if existing != nil {
		return nil, d.Err("gatehouse option given twice")
	}
	if err := cfutil.NoArgs(d); err != nil {
		return nil, err
	}
	app := new(App)
	err := cfutil.ParseBlock(d, cfutil.NewOnceSet("", "client", "api_resource"), func(name string) (err error) {
		switch name {
		case "issuer":
			app.Issuer, err = cfutil.OneArg(d)
		case "audience":
			app.Audience, err = cfutil.OneArg(d)
		case "store":
			app.StoreRaw, err = parseStore(d)
		case "users_file":
			app.UsersFile, err = cfutil.OneArg(d)
		case "min_password_length":
			app.MinPasswordLength, err = cfutil.PositiveIntArg(d)
		case "access_token_lifetime":
			app.AccessTokenLifetime, err = cfutil.DurationArg(d)
		case "id_token_lifetime":
			app.IDTokenLifetime, err = cfutil.DurationArg(d)
		case "code_lifetime":
			app.CodeLifetime, err = cfutil.DurationArg(d)
		case "device_code_lifetime":
			app.DeviceCodeLifetime, err = cfutil.DurationArg(d)
		case "device_poll_interval":
			app.DevicePollInterval, err = cfutil.DurationArg(d)
		case "session_idle_timeout":
			app.SessionIdleTimeout, err = cfutil.DurationArg(d)
		case "session_lifetime":
			app.SessionLifetime, err = cfutil.DurationArg(d)
		case "refresh_token":
			app.RefreshToken, err = parseRefreshToken(d)
		case "uniform_error_status":
			app.UniformErrorStatus, err = cfutil.Flag(d)
		case "hsts":
			app.HSTS, err = cfutil.OneArg(d)
		case "password_hash_concurrency":
			app.PasswordHashConcurrency, err = cfutil.PositiveIntArg(d)
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
		case "second_factor":
			app.SecondFactor, err = parseSecondFactor(d)
		case "signing_keys":
			app.SigningKeys, err = parseSigningKeys(d)
		case "verifier":
			app.VerifierConfig, err = parseVerifier(d)
		case "audit":
			app.Audit, err = parseAudit(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	if err != nil {
		return nil, err
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

// parseAPIResource parses `api_resource <name> { secret_sha256 <hex>... }`.
func parseAPIResource(d *caddyfile.Dispenser) (APIResource, error) {
	var r APIResource
	var err error
	if r.Name, err = cfutil.OneArg(d); err != nil {
		return r, err
	}
	once := cfutil.NewOnceSet(fmt.Sprintf("api_resource %q: ", r.Name), "secret_sha256")
	err = cfutil.ParseBlock(d, once, func(name string) error {
		switch name {
		case "secret_sha256":
			return cfutil.AppendArgs(d, &r.SecretSHA256)
		default:
			return cfutil.Unrecognized(d)
		}
	})
	return r, err
}

// parseLockout parses `lockout off` or `lockout { ... }`.
func parseLockout(d *caddyfile.Dispenser) (*Lockout, error) {
	l := new(Lockout)
	if d.NextArg() {
		if d.Val() != "off" || d.NextArg() {
			return nil, d.ArgErr()
		}
		l.MaxFailures = -1
		if d.NextBlock(d.Nesting()) {
			return nil, d.Err("lockout off takes no block")
		}
		return l, nil
	}
	err := cfutil.ParseBlock(d, cfutil.NewOnceSet("lockout: "), func(name string) (err error) {
		switch name {
		case "max_failures":
			l.MaxFailures, err = cfutil.PositiveIntArg(d)
		case "duration":
			l.Duration, err = cfutil.DurationArg(d)
		case "window":
			l.Window, err = cfutil.DurationArg(d)
		case "throttle_after":
			l.ThrottleAfter, err = cfutil.PositiveIntArg(d)
		case "base_delay":
			l.BaseDelay, err = cfutil.DurationArg(d)
		case "max_delay":
			l.MaxDelay, err = cfutil.DurationArg(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	return l, err
}

// parseSecondFactor parses `second_factor { ... }`.
func parseSecondFactor(d *caddyfile.Dispenser) (*SecondFactor, error) {
	if err := cfutil.NoArgs(d); err != nil {
		return nil, err
	}
	f := new(SecondFactor)
	err := cfutil.ParseBlock(d, cfutil.NewOnceSet("second_factor: ", "scopes"), func(name string) (err error) {
		switch name {
		case "scopes":
			return cfutil.AppendArgs(d, &f.Scopes)
		case "totp_issuer":
			f.TOTPIssuer, err = cfutil.OneArg(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	return f, err
}

// parseSigningKeys parses `signing_keys { ... }`.
func parseSigningKeys(d *caddyfile.Dispenser) (*SigningKeys, error) {
	if err := cfutil.NoArgs(d); err != nil {
		return nil, err
	}
	k := new(SigningKeys)
	err := cfutil.ParseBlock(d, cfutil.NewOnceSet("signing_keys: ", "algorithms"), func(name string) (err error) {
		switch name {
		case "period":
			k.Period, err = cfutil.DurationOrOff(d)
		case "announce":
			k.Announce, err = cfutil.DurationArg(d)
		case "check_interval":
			k.CheckInterval, err = cfutil.DurationArg(d)
		case "bits":
			k.Bits, err = cfutil.PositiveIntArg(d)
		case "algorithms":
			err = cfutil.AppendArgs(d, &k.Algorithms)
		case "encryption_key_env":
			k.EncryptionKeyEnv, err = cfutil.SecretArg(d, "signing_keys: encryption_key_env")
		case "encryption_key_file":
			k.EncryptionKeyFile, err = cfutil.OneArg(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	return k, err
}

// parseVerifier parses `verifier { ... }`.
func parseVerifier(d *caddyfile.Dispenser) (*VerifierConfig, error) {
	if err := cfutil.NoArgs(d); err != nil {
		return nil, err
	}
	v := new(VerifierConfig)
	err := cfutil.ParseBlock(d, cfutil.NewOnceSet("verifier: ", "algorithms", "types"), func(name string) (err error) {
		switch name {
		case "issuer":
			v.Issuer, err = cfutil.OneArg(d)
		case "audience":
			v.Audience, err = cfutil.OneArg(d)
		case "jwks_url":
			v.JWKSURL, err = cfutil.OneArg(d)
		case "algorithms":
			err = cfutil.AppendArgs(d, &v.Algorithms)
		case "types":
			err = cfutil.AppendArgs(d, &v.Types)
		case "leeway":
			v.Leeway, err = cfutil.DurationArg(d)
		case "cache_size":
			v.CacheSize, err = cfutil.IntOrOff(d)
		case "check_revocations":
			v.CheckRevocations, err = cfutil.OnOff(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	return v, err
}

// parseAudit parses `audit [{ ... }]`.
func parseAudit(d *caddyfile.Dispenser) (*Audit, error) {
	if err := cfutil.NoArgs(d); err != nil {
		return nil, err
	}
	au := new(Audit)
	err := cfutil.ParseBlock(d, cfutil.NewOnceSet("audit: "), func(name string) (err error) {
		switch name {
		case "checkpoint_interval":
			au.CheckpointInterval, err = cfutil.DurationArg(d)
		case "on_failure":
			au.OnFailure, err = cfutil.OneArg(d)
		case "instance":
			au.Instance, err = cfutil.OneArg(d)
		case "key_period":
			au.KeyPeriod, err = cfutil.DurationOrOff(d)
		case "flush_delay":
			au.FlushDelay, err = cfutil.DurationOrOff(d)
		case "encryption_key_env":
			au.EncryptionKeyEnv, err = cfutil.SecretArg(d, "audit: encryption_key_env")
		case "encryption_key_file":
			au.EncryptionKeyFile, err = cfutil.OneArg(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	return au, err
}
