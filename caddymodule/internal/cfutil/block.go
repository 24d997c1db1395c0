package cfutil

import (
	"slices"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// ParseBlock runs each subdirective of the block that follows the current
// line through once, which refuses one given twice, then through parse,
// which reads the subdirective's arguments (and nested block) and returns
// Unrecognized for a name it does not know. A line without a block has no
// subdirectives.
func ParseBlock(d *caddyfile.Dispenser, once *OnceSet, parse func(name string) error) error {
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		if err := once.Check(d, name); err != nil {
			return err
		}
		if err := parse(name); err != nil {
			return err
		}
	}
	return nil
}

// Unrecognized is the error of a subdirective that the block does not
// know. It quotes the word only when it could be a subdirective's name
// (letters, digits, '_' and '-'): a DSN or a key written alone on a line
// is not shown.
func Unrecognized(d *caddyfile.Dispenser) error {
	name := d.Val()
	for _, c := range []byte(name) {
		if !(c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return d.Err("unrecognized subdirective (a word that is no subdirective's name; not shown, as it may be a secret)")
		}
	}
	return d.Errf("unrecognized subdirective %q", name)
}

// OnceSet refuses a subdirective given twice in one block; the names in
// repeatable may repeat (their arguments add up).
type OnceSet struct {
	prefix     string
	repeatable []string
	seen       map[string]bool
}

// NewOnceSet returns an empty set; prefix starts its errors, e.g.
// "lockout: ".
func NewOnceSet(prefix string, repeatable ...string) *OnceSet {
	return &OnceSet{prefix: prefix, repeatable: repeatable, seen: map[string]bool{}}
}

// Check fails when name was checked before and is not repeatable. Callers
// may check names of their own, e.g. "header X-User" for one header name
// of a repeatable subdirective, or a setting also given as an argument.
func (o *OnceSet) Check(d *caddyfile.Dispenser, name string) error {
	if slices.Contains(o.repeatable, name) {
		return nil
	}
	if o.seen[name] {
		return d.Errf("%s%s given twice", o.prefix, name)
	}
	o.seen[name] = true
	return nil
}
