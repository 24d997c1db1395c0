package cfutil

import (
	"net/http"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// NoArgs checks that the current line has no (further) arguments.
func NoArgs(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// Flag checks that the current line has no arguments, and returns true.
func Flag(d *caddyfile.Dispenser) (bool, error) {
	if err := NoArgs(d); err != nil {
		return false, err
	}
	return true, nil
}

// OneArg reads the one argument of the current line.
func OneArg(d *caddyfile.Dispenser) (string, error) {
	if !d.NextArg() {
		return "", d.ArgErr()
	}
	v := d.Val()
	if err := NoArgs(d); err != nil {
		return "", err
	}
	return v, nil
}

// SecretArg reads the one argument of the current line, which may hold a
// secret (a DSN with its password): its errors name what (such as "dsn")
// and never quote a word of the line, as the dispenser's ArgErr would.
func SecretArg(d *caddyfile.Dispenser, what string) (string, error) {
	if !d.NextArg() {
		return "", d.Errf("%s: one argument needed", what)
	}
	v := d.Val()
	if d.NextArg() {
		return "", d.Errf("%s is one argument: put it in quotes if it holds spaces", what)
	}
	return v, nil
}

// ListArgs reads the one or more arguments of the current line.
func ListArgs(d *caddyfile.Dispenser) ([]string, error) {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return nil, d.ArgErr()
	}
	return args, nil
}

// AppendArgs appends the one or more arguments of the current line to
// list: a repeated subdirective's arguments add up.
func AppendArgs(d *caddyfile.Dispenser, list *[]string) error {
	args, err := ListArgs(d)
	*list = append(*list, args...)
	return err
}

// DurationArg reads the one duration argument of the current line, in
// Caddy's forms (90s, 1h, 15d).
func DurationArg(d *caddyfile.Dispenser) (caddy.Duration, error) {
	v, err := OneArg(d)
	if err != nil {
		return 0, err
	}
	dur, err := caddy.ParseDuration(v)
	if err != nil {
		return 0, d.Errf("bad duration %q: %v", v, err)
	}
	return caddy.Duration(dur), nil
}

// PositiveIntArg reads the one positive integer argument of the current
// line.
func PositiveIntArg(d *caddyfile.Dispenser) (int, error) {
	v, err := OneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, d.Errf("%q is not a positive integer", v)
	}
	return n, nil
}

// DurationOrOff reads a duration argument, or "off" as -1.
func DurationOrOff(d *caddyfile.Dispenser) (caddy.Duration, error) {
	if off, err := isOff(d); off || err != nil {
		return -1, err
	}
	return DurationArg(d)
}

// IntOrOff reads a positive integer argument, or "off" as -1.
func IntOrOff(d *caddyfile.Dispenser) (int, error) {
	if off, err := isOff(d); off || err != nil {
		return -1, err
	}
	return PositiveIntArg(d)
}

// isOff reports whether the one argument of the current line is "off";
// otherwise it leaves the argument to be read again.
func isOff(d *caddyfile.Dispenser) (bool, error) {
	if !d.NextArg() {
		return false, d.ArgErr()
	}
	if d.Val() == "off" {
		return true, NoArgs(d)
	}
	d.Prev()
	return false, nil
}

// OnOff reads an optional "on" or "off" argument; none means on.
func OnOff(d *caddyfile.Dispenser) (*bool, error) {
	on := true
	if d.NextArg() {
		switch d.Val() {
		case "on":
		case "off":
			on = false
		default:
			return nil, d.Errf("%q is neither on nor off", d.Val())
		}
		if err := NoArgs(d); err != nil {
			return nil, err
		}
	}
	return &on, nil
}

// HeaderTemplates reads `header <Name> <template>...` into headers, once
// per canonical header name (checked against once).
func HeaderTemplates(d *caddyfile.Dispenser, once *OnceSet, headers *map[string][]string) error {
	list, err := ListArgs(d)
	if err != nil {
		return err
	}
	if len(list) < 2 {
		return d.ArgErr()
	}
	name := http.CanonicalHeaderKey(list[0])
	if err := once.Check(d, "header "+name); err != nil {
		return err
	}
	if *headers == nil {
		*headers = map[string][]string{}
	}
	(*headers)[name] = list[1:]
	return nil
}

// ReadinessArgs reads "readiness <name> [optional]": a handler's check in the
// readiness probe.
func ReadinessArgs(d *caddyfile.Dispenser) (name string, optional bool, err error) {
	args := d.RemainingArgs()
	switch {
	case len(args) == 1:
		return args[0], false, nil
	case len(args) == 2 && args[1] == "optional":
		return args[0], true, nil
	}
	return "", false, d.Err("readiness takes a name and, optionally, the word optional")
}
