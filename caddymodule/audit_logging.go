package caddymodule

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	caddylogging "github.com/caddyserver/caddy/v2/modules/logging"
	"go.uber.org/zap/zapcore"
)

// auditLog is what the audit needs to know of one of the configuration's
// logs that takes the audit logger's entries.
type auditLog struct {
	name     string
	sampling bool
	encoder  reflect.Type // nil: none built
	json     *caddylogging.LogEncoderConfig
}

// The encoders whose lines verify: Caddy's json encoder and zap's, which
// Caddy uses by default off a terminal.
var (
	caddyJSONEncoder = reflect.TypeFor[*caddylogging.JSONEncoder]()
	zapJSONEncoder   = reflect.TypeOf(zapcore.NewJSONEncoder(zapcore.EncoderConfig{}))
)

// checkAuditLogging refuses a logging configuration under which the audit
// logger's lines would not verify: a log that takes them and samples, or
// encodes other than JSON with Caddy's default envelope keys (msg, level,
// ts, logger), or no log at all that takes them.
func checkAuditLogging(ctx caddy.Context) error {
	logs, err := auditLogs(ctx)
	if err != nil {
		return err
	}
	if len(logs) == 0 {
		return fmt.Errorf("audit: no log takes the logger %s (its records would go nowhere): "+
			"add one, e.g. `log audit { output file <path>; format json; include %s }`", AuditLoggerName, AuditLoggerName)
	}
	for _, l := range logs {
		if err := l.check(); err != nil {
			return fmt.Errorf("audit: log %q takes the logger %s and %w; give the audit a log of its own "+
				"(`log %s { output file <path>; format json; include %s }`) and exclude %s from this one",
				l.name, AuditLoggerName, err, "audit", AuditLoggerName, AuditLoggerName)
		}
	}
	return nil
}

func (l auditLog) check() error {
	if l.sampling {
		return errors.New("samples its entries (sampling), which would drop records")
	}
	switch l.encoder {
	case zapJSONEncoder:
		return nil
	case caddyJSONEncoder:
	default:
		return fmt.Errorf("encodes with %v, not json: its lines would not verify", l.encoder)
	}
	c := l.json
	for _, k := range []struct {
		name, def string
		v         *string
	}{{"message_key", "msg", c.MessageKey}, {"level_key", "level", c.LevelKey}, {"time_key", "ts", c.TimeKey}, {"name_key", "logger", c.NameKey}} {
		if k.v != nil && *k.v != "" && *k.v != k.def {
			return fmt.Errorf("renames %s to %q, a member a record's line may not have", k.name, *k.v)
		}
	}
	if c.LineEnding != nil && *c.LineEnding != "\n" {
		return errors.New("sets a line_ending other than a line break")
	}
	return nil
}

// auditLogs returns the logs of ctx's configuration that take the audit
// logger's entries, as Caddy picks them for a module of that name. Caddy
// does not export a configuration's logging from its context, so it is
// read by reflection, without writing anything; a Caddy that lays it out
// otherwise is an error, never a log unchecked. A context without a
// configuration (a test's) has Caddy's default log only.
func auditLogs(ctx caddy.Context) ([]auditLog, error) {
	errLayout := errors.New("audit: this Caddy's logging configuration cannot be read to check the audit log")
	cfg := reflect.ValueOf(ctx).FieldByName("cfg")
	if !cfg.IsValid() || cfg.Kind() != reflect.Pointer {
		return nil, errLayout
	}
	if cfg.IsNil() {
		return nil, nil
	}
	lg := cfg.Elem().FieldByName("Logging")
	if !lg.IsValid() || lg.Type() != reflect.TypeFor[*caddy.Logging]() {
		return nil, errLayout
	}
	if lg.IsNil() {
		return nil, nil
	}
	var out []auditLog
	m := lg.Elem().FieldByName("Logs")
	names := m.MapKeys()
	slices.SortFunc(names, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	for _, name := range names {
		cl := m.MapIndex(name)
		if cl.IsNil() {
			continue
		}
		cl = cl.Elem()
		if !takesModule(strs(cl.FieldByName("Include")), strs(cl.FieldByName("Exclude")), AuditLoggerName) {
			continue
		}
		l := auditLog{name: name.String(), sampling: !cl.FieldByName("Sampling").IsNil()}
		enc := cl.FieldByName("encoder")
		if !enc.IsValid() || enc.Kind() != reflect.Interface {
			return nil, errLayout
		}
		if !enc.IsNil() {
			l.encoder = enc.Elem().Type()
			if l.encoder == caddyJSONEncoder {
				l.json = readEncoderConfig(enc.Elem().Elem().FieldByName("LogEncoderConfig"))
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// readEncoderConfig copies the keys of a json encoder's configuration.
func readEncoderConfig(v reflect.Value) *caddylogging.LogEncoderConfig {
	str := func(name string) *string {
		f := v.FieldByName(name)
		if f.IsNil() {
			return nil
		}
		s := f.Elem().String()
		return &s
	}
	return &caddylogging.LogEncoderConfig{MessageKey: str("MessageKey"), LevelKey: str("LevelKey"),
		TimeKey: str("TimeKey"), NameKey: str("NameKey"), LineEnding: str("LineEnding")}
}

func strs(v reflect.Value) []string {
	out := make([]string, v.Len())
	for i := range out {
		out[i] = v.Index(i).String()
	}
	return out
}

// takesModule reports whether a log with these include and exclude lists
// takes the entries of the module (a logger) name, as Caddy's
// CustomLog.matchesModule decides it (a log's core gets them).
func takesModule(include, exclude []string, name string) bool {
	if len(include) == 0 && len(exclude) == 0 {
		return true
	}
	name += "."
	var accept, reject int
	for _, ns := range include {
		if (strings.HasPrefix(ns+".", name) || strings.HasPrefix(name, ns+".")) && len(ns) > accept {
			accept = len(ns)
		}
	}
	if len(include) > 0 && accept == 0 {
		return false
	}
	for _, ns := range exclude {
		if ns == "*" {
			return false
		}
		if strings.HasPrefix(name, ns+".") && len(ns) > reject {
			reject = len(ns)
		}
	}
	if reject > accept {
		return false
	}
	return accept > reject || (len(include) == 0 && reject == 0)
}
