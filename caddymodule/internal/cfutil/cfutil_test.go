package cfutil

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// block is what testBlock fills.
type block struct {
	name    string
	list    []string
	timeout caddy.Duration
	limit   int
	cache   int
	period  caddy.Duration
	on      *bool
	flag    bool
	nested  []string
}

// parseTestBlock parses `test { ... }` with every argument reader, "list"
// repeatable.
func parseTestBlock(input string) (*block, error) {
	d := caddyfile.NewTestDispenser(input)
	d.Next()
	if err := NoArgs(d); err != nil {
		return nil, err
	}
	b := new(block)
	err := ParseBlock(d, NewOnceSet("test: ", "list"), func(name string) (err error) {
		switch name {
		case "name":
			b.name, err = OneArg(d)
		case "list":
			err = AppendArgs(d, &b.list)
		case "timeout":
			b.timeout, err = DurationArg(d)
		case "limit":
			b.limit, err = PositiveIntArg(d)
		case "cache":
			b.cache, err = IntOrOff(d)
		case "period":
			b.period, err = DurationOrOff(d)
		case "check":
			b.on, err = OnOff(d)
		case "flag":
			b.flag, err = Flag(d)
		case "nested":
			if err = NoArgs(d); err != nil {
				return err
			}
			err = ParseBlock(d, NewOnceSet("nested: "), func(name string) error {
				b.nested = append(b.nested, name)
				return NoArgs(d)
			})
		default:
			return Unrecognized(d)
		}
		return err
	})
	return b, err
}

func TestParseBlock(t *testing.T) {
	b, err := parseTestBlock(`test {
		name a
		list x y
		list z
		timeout 90s
		limit 3
		cache off
		period 1h
		check off
		flag
		nested {
			one
			two
		}
	}`)
	if err != nil {
		t.Fatal(err)
	}
	if b.name != "a" || strings.Join(b.list, " ") != "x y z" || time.Duration(b.timeout) != 90*time.Second ||
		b.limit != 3 || b.cache != -1 || time.Duration(b.period) != time.Hour || b.on == nil || *b.on || !b.flag ||
		strings.Join(b.nested, " ") != "one two" {
		t.Errorf("parsed %+v", b)
	}
	b, err = parseTestBlock("test {\n\tcache 10\n\tperiod off\n\tcheck\n}")
	if err != nil || b.cache != 10 || b.period != -1 || !*b.on {
		t.Errorf("parsed %+v, %v", b, err)
	}
	if b, err := parseTestBlock("test"); err != nil || b.name != "" {
		t.Errorf("no block: %+v, %v", b, err)
	}
}

func TestParseBlockErrors(t *testing.T) {
	tests := []struct {
		name, input, want string
	}{
		{"argument", "test a", "wrong argument count"},
		{"unknown", "test {\n\tnames a\n}", `unrecognized subdirective "names"`},
		{"twice", "test {\n\tname a\n\tname b\n}", "test: name given twice"},
		{"twice nested", "test {\n\tnested {\n\t\tone\n\t\tone\n\t}\n}", "nested: one given twice"},
		{"no argument", "test {\n\tname\n}", "wrong argument count"},
		{"two arguments", "test {\n\tname a b\n}", "wrong argument count"},
		{"empty list", "test {\n\tlist\n}", "wrong argument count"},
		{"bad duration", "test {\n\ttimeout soon\n}", `bad duration "soon"`},
		{"zero", "test {\n\tlimit 0\n}", `"0" is not a positive integer`},
		{"not a number", "test {\n\tcache many\n}", `"many" is not a positive integer`},
		{"off with argument", "test {\n\tperiod off 1h\n}", "wrong argument count"},
		{"off missing", "test {\n\tperiod\n}", "wrong argument count"},
		{"neither on nor off", "test {\n\tcheck yes\n}", `"yes" is neither on nor off`},
		{"on with argument", "test {\n\tcheck on now\n}", "wrong argument count"},
		{"flag with argument", "test {\n\tflag yes\n}", "wrong argument count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseTestBlock(tt.input)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestOnceSetOwnNames(t *testing.T) {
	d := caddyfile.NewTestDispenser("header X-User a")
	d.Next()
	once := NewOnceSet("auth: ", "header")
	for range 2 {
		if err := once.Check(d, "header"); err != nil {
			t.Fatalf("repeatable name refused: %v", err)
		}
	}
	if err := once.Check(d, "header X-User"); err != nil {
		t.Fatal(err)
	}
	if err := once.Check(d, "header X-User"); err == nil || !strings.Contains(err.Error(), "auth: header X-User given twice") {
		t.Errorf("error %v", err)
	}
}
