package caddymodule

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// This file parses the token-service subdirectives of the gatehouse global
// option (see parseGlobalOption for the whole syntax).

// parseAPIResource parses `api_resource <name> { secret_sha256 <hex>... }`.
func parseAPIResource(d *caddyfile.Dispenser) (APIResource, error) {
	var r APIResource
	var err error
	if r.Name, err = oneArg(d); err != nil {
		return r, err
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "secret_sha256":
			list, err := listArgs(d)
			if err != nil {
				return r, err
			}
			r.SecretSHA256 = append(r.SecretSHA256, list...)
		default:
			return r, d.Errf("unrecognized subdirective %q", d.Val())
		}
	}
	return r, nil
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
	err := parseBlock(d, newOnceSet("lockout: "), func(name string) (err error) {
		switch name {
		case "max_failures":
			l.MaxFailures, err = positiveIntArg(d)
		case "duration":
			l.Duration, err = durationArg(d)
		case "window":
			l.Window, err = durationArg(d)
		case "throttle_after":
			l.ThrottleAfter, err = positiveIntArg(d)
		case "base_delay":
			l.BaseDelay, err = durationArg(d)
		case "max_delay":
			l.MaxDelay, err = durationArg(d)
		default:
			return d.Errf("unrecognized subdirective %q", name)
		}
		return err
	})
	return l, err
}

// parseSigningKeys parses `signing_keys { ... }`.
func parseSigningKeys(d *caddyfile.Dispenser) (*SigningKeys, error) {
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	k := new(SigningKeys)
	err := parseBlock(d, newOnceSet("signing_keys: "), func(name string) (err error) {
		switch name {
		case "period":
			k.Period, err = durationOrOff(d)
		case "announce":
			k.Announce, err = durationArg(d)
		case "check_interval":
			k.CheckInterval, err = durationArg(d)
		case "bits":
			k.Bits, err = positiveIntArg(d)
		case "encryption_key_env":
			k.EncryptionKeyEnv, err = oneArg(d)
		case "encryption_key_file":
			k.EncryptionKeyFile, err = oneArg(d)
		default:
			return d.Errf("unrecognized subdirective %q", name)
		}
		return err
	})
	return k, err
}

// parseVerifier parses `verifier { ... }`.
func parseVerifier(d *caddyfile.Dispenser) (*VerifierConfig, error) {
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	v := new(VerifierConfig)
	err := parseBlock(d, newOnceSet("verifier: ", "algorithms", "types"), func(name string) (err error) {
		var list []string
		switch name {
		case "issuer":
			v.Issuer, err = oneArg(d)
		case "audience":
			v.Audience, err = oneArg(d)
		case "jwks_url":
			v.JWKSURL, err = oneArg(d)
		case "algorithms":
			list, err = listArgs(d)
			v.Algorithms = append(v.Algorithms, list...)
		case "types":
			list, err = listArgs(d)
			v.Types = append(v.Types, list...)
		case "leeway":
			v.Leeway, err = durationArg(d)
		case "cache_size":
			v.CacheSize, err = intOrOff(d)
		case "check_revocations":
			v.CheckRevocations, err = onOff(d)
		default:
			return d.Errf("unrecognized subdirective %q", name)
		}
		return err
	})
	return v, err
}

// durationOrOff reads a duration argument, or "off" as -1.
func durationOrOff(d *caddyfile.Dispenser) (caddy.Duration, error) {
	if !d.NextArg() {
		return 0, d.ArgErr()
	}
	if d.Val() == "off" {
		if d.NextArg() {
			return 0, d.ArgErr()
		}
		return -1, nil
	}
	d.Prev()
	return durationArg(d)
}

// intOrOff reads a positive integer argument, or "off" as -1.
func intOrOff(d *caddyfile.Dispenser) (int, error) {
	if !d.NextArg() {
		return 0, d.ArgErr()
	}
	if d.Val() == "off" {
		if d.NextArg() {
			return 0, d.ArgErr()
		}
		return -1, nil
	}
	d.Prev()
	return positiveIntArg(d)
}

// onOff reads an optional "on" or "off" argument; none means on.
func onOff(d *caddyfile.Dispenser) (*bool, error) {
	on := true
	if d.NextArg() {
		switch d.Val() {
		case "on":
		case "off":
			on = false
		default:
			return nil, d.Errf("%q is neither on nor off", d.Val())
		}
		if d.NextArg() {
			return nil, d.ArgErr()
		}
	}
	return &on, nil
}
