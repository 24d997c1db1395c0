package caddymodule_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/caddymodule/pgstore"
	"github.com/gatehouse/gatehouse/caddymodule/queryhandler"
	"github.com/gatehouse/gatehouse/caddymodule/wshandler"
	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/device"
	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store/postgres"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/iqengine"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/pgengine"
	"github.com/gatehouse/gatehouse/queryproxy/sqliteengine"
	"github.com/gatehouse/gatehouse/wsauth"
	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// documentedDefaults are the defaults the pages under docs/configuration/
// give, by page, then by the JSON struct a table describes ("" for the
// module's own; a "### `engine sqlite`" heading names another), then by
// JSON path: each is the constant the code applies. The test fails on a
// page's default that differs, a documented default missing here, and a
// default here the page does not give.
var documentedDefaults = map[string]map[string]map[string]any{
	"gatehouse.md": {
		"": {
			"audience":                        identity.DefaultAudience,
			"min_password_length":             users.DefaultMinPasswordLength,
			"access_token_lifetime":           identity.DefaultAccessTokenLifetime,
			"id_token_lifetime":               identity.DefaultIDTokenLifetime,
			"code_lifetime":                   tokens.DefaultCodeLifetime,
			"device_code_lifetime":            device.DefaultLifetime,
			"device_poll_interval":            device.DefaultInterval,
			"session_idle_timeout":            session.DefaultIdleTimeout,
			"session_lifetime":                session.DefaultLifetime,
			"hsts":                            identity.DefaultHSTS,
			"refresh_token.grace":             clients.DefaultRefreshGrace,
			"refresh_token.sliding_lifetime":  clients.DefaultRefreshSlidingLifetime,
			"refresh_token.absolute_lifetime": clients.DefaultRefreshAbsoluteLifetime,
			"refresh_token.max_per_user":      clients.DefaultRefreshMaxPerUser,
			"lockout.max_failures":            users.DefaultMaxFailures,
			"lockout.window":                  users.DefaultWindow,
			"lockout.duration":                users.DefaultLockDuration,
			"lockout.throttle_after":          users.DefaultThrottleAfter,
			"lockout.base_delay":              users.DefaultBaseDelay,
			"lockout.max_delay":               users.DefaultMaxDelay,
			"signing_keys.period":             keys.DefaultPeriod,
			"signing_keys.announce":           keys.DefaultAnnounce,
			"signing_keys.check_interval":     keys.DefaultCheckInterval,
			"signing_keys.bits":               keys.DefaultBits,
			"signing_keys.algorithms":         keys.DefaultAlgorithm,
			"audit.checkpoint_interval":       audit.DefaultCheckpointInterval,
			"audit.on_failure":                caddymodule.AuditContinue,
			"audit.key_period":                keys.DefaultAuditPeriod,
			"audit.flush_delay":               caddymodule.DefaultAuditFlushDelay,
			"verifier.leeway":                 verify.DefaultLeeway,
			"verifier.cache_size":             verify.DefaultCacheSize,
		},
		"store postgres": {
			"max_conns": postgres.DefaultMaxConns,
		},
	},
	"gatehouse_ws.md": {
		"": {
			"subprotocols":               wsauth.DefaultSubprotocol,
			"max_message_bytes":          wsauth.DefaultMaxMessageBytes,
			"send_queue_bytes":           wsauth.DefaultSendQueueBytes,
			"send_queue":                 wsauth.DefaultSendQueue,
			"auth_timeout":               wsauth.DefaultAuthTimeout,
			"auth_max_messages":          wsauth.DefaultAuthMaxMessages,
			"max_unauthenticated":        wsauth.DefaultMaxUnauthenticated,
			"ping_interval":              wsauth.DefaultPingInterval,
			"idle_timeout":               wsauth.DefaultIdleTimeout,
			"backend_message_timeout":    wsauth.DefaultBackendMessageTimeout,
			"vendor":                     zenith.DefaultVendor,
			"recheck_interval":           wsauth.DefaultRecheckInterval,
			"expiry_grace":               wsauth.DefaultExpiryGrace,
			"drain_window":               wshandler.DefaultDrainWindow,
			"transaction_ids":            wsauth.TransactionIDsInt53,
			"limits.subscriptions":       policy.DefaultSubscriptions,
			"limits.messages_per_second": policy.DefaultMessagesPerSecond,
			"limits.burst":               policy.DefaultBurst,
			"limits.sessions":            policy.DefaultSessions,
		},
	},
	"gatehouse_query.md": {
		"": {
			"max_body_size":           queryproxy.DefaultMaxBodyBytes,
			"max_rows":                queryproxy.DefaultMaxRows,
			"max_concurrent_per_user": queryproxy.DefaultMaxConcurrentPerUser,
			"max_user_share":          queryproxy.DefaultMaxUserShare,
			"max_statement_size":      iql.DefaultMaxBytes,
			"max_in_list":             iql.DefaultMaxInList,
			"max_criteria":            iql.DefaultMaxPredicates,
			"max_insert_rows":         iql.DefaultMaxRows,
			"max_nesting":             iql.DefaultMaxDepth,
			"realm":                   verify.DefaultRealm,
			"tables.feed":             queryproxy.DefaultFeed,
		},
		"engine sqlite": {
			"statement_timeout": sqliteengine.DefaultStatementTimeout,
			"max_read_conns":    sqliteengine.DefaultMaxReadConns,
		},
		"engine postgres": {
			"max_conns":         pgengine.DefaultMaxConns,
			"statement_timeout": pgengine.DefaultStatementTimeout,
			"schema":            pgengine.DefaultSchema,
		},
		"engine iq": {
			"timeout":         iqengine.DefaultTimeout,
			"max_answer_size": iqengine.DefaultMaxAnswerBytes,
			"max_conns":       iqengine.DefaultMaxConns,
		},
	},
}

// configTypes are the Go types whose JSON the tables describe.
var configTypes = map[string]map[string]reflect.Type{
	"gatehouse.md": {
		"":               reflect.TypeFor[caddymodule.App](),
		"store postgres": reflect.TypeFor[pgstore.PostgresStore](),
	},
	"gatehouse_ws.md": {
		"": reflect.TypeFor[wshandler.Handler](),
	},
	"gatehouse_query.md": {
		"":                reflect.TypeFor[queryhandler.Handler](),
		"engine sqlite":   reflect.TypeFor[queryhandler.SQLiteEngine](),
		"engine postgres": reflect.TypeFor[queryhandler.PostgresEngine](),
		"engine iq":       reflect.TypeFor[queryhandler.IQEngine](),
	},
}

// docDefault is one default a page gives.
type docDefault struct {
	table, path, value string
	line               int
}

var backquoted = regexp.MustCompile("`([^`]*)`")

// pageDefaults reads the defaults a page gives: the rows of a table whose
// header has a JSON column and a default column, where the default is one
// backquoted value (a row that gives several, or prose, is not a default
// this test can read: the "Defaults" section gives those one per row). A
// "### `x`" heading names the struct the tables under it describe, until
// the next "##" heading.
func pageDefaults(t *testing.T, page string) []docDefault {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "configuration", page))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docDefault
	table, jsonCol, defCol := "", -1, -1
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "### "):
			table = ""
			if m := backquoted.FindStringSubmatch(line); m != nil {
				table = m[1]
			}
		case strings.HasPrefix(line, "## "):
			table = ""
		}
		if !strings.HasPrefix(line, "|") {
			jsonCol, defCol = -1, -1
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if jsonCol < 0 { // a header
			for i, c := range cells {
				switch strings.ToLower(c) {
				case "json":
					jsonCol = i
				case "default":
					defCol = i
				}
			}
			if jsonCol < 0 || defCol < 0 {
				jsonCol, defCol = -2, -2 // a table without defaults
			}
			continue
		}
		if jsonCol == -2 || strings.HasPrefix(cells[0], "---") || len(cells) <= max(jsonCol, defCol) {
			continue
		}
		key := backquoted.FindStringSubmatch(cells[jsonCol])
		vals := backquoted.FindAllStringSubmatch(cells[defCol], -1)
		if key == nil || len(vals) != 1 {
			continue
		}
		path := key[1]
		if i := strings.IndexAny(path, " :"); i >= 0 {
			continue // a JSON object, not one field
		}
		out = append(out, docDefault{table: table, path: path, value: vals[0][1], line: n})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sizeUnit reads "1 MiB", "64 KiB" as bytes.
var sizeUnit = regexp.MustCompile(`^(\d+) (KiB|MiB)$`)

// sameValue says whether text, as a page or a comment writes it, is want.
func sameValue(text string, want any) (bool, error) {
	text = strings.Trim(strings.TrimSpace(text), `"[]`)
	switch w := want.(type) {
	case time.Duration:
		d, err := caddy.ParseDuration(text)
		return d == w, err
	case string:
		return text == w, nil
	}
	var n int64
	if m := sizeUnit.FindStringSubmatch(text); m != nil {
		n, _ = strconv.ParseInt(m[1], 10, 64)
		n <<= map[string]int{"KiB": 10, "MiB": 20}[m[2]]
	} else {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return false, err
		}
		n = int64(f)
	}
	return fmt.Sprint(n) == fmt.Sprint(want), nil
}

// jsonField finds the field of typ (a struct, through pointers and slices)
// that a dotted JSON path names, and the struct type that declares it.
func jsonField(typ reflect.Type, path string) (reflect.StructField, reflect.Type, bool) {
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return reflect.StructField{}, nil, false
		}
		var field reflect.StructField
		found := false
		for f := range typ.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == seg {
				field, found = f, true
				break
			}
		}
		if !found {
			return field, nil, false
		}
		if i == len(segs)-1 {
			return field, typ, true
		}
		typ = field.Type
	}
	return reflect.StructField{}, nil, false
}

// fieldComments are the doc comments of the struct fields declared in the
// Go files of the module's package pkg, by "Type.Field".
func fieldComments(t *testing.T, pkg string) map[string]string {
	t.Helper()
	out := map[string]string{}
	dir := filepath.Join("..", strings.TrimPrefix(pkg, "github.com/gatehouse/gatehouse"))
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range gd.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fl := range st.Fields.List {
					for _, name := range fl.Names {
						out[ts.Name.Name+"."+name.Name] = fl.Doc.Text()
					}
				}
			}
		}
	}
	return out
}

// commentDefault is the value after "Default" in a field's comment, up to
// the end of its sentence: `Default 10s.`, `Default "Gatehouse".`,
// `Default 1 MiB.`, `Default ["ServiceJson"].`
var commentDefault = regexp.MustCompile(`\bDefault:?\s+("[^"]*"|\[[^\]]*\]|\d+ [KM]iB|[^\s.,;:]+(?:\.\d+)?)`)

// TestDocumentedDefaultsAreTheCode: every default a page under
// docs/configuration/ gives is a JSON field of its module, equals the
// constant the code applies, and agrees with the field's comment where
// the comment names one; every default listed here is on its page. It
// failed when a page gave 2m for expiry_grace (the code's is 5m), when a
// default of the list was missing from the page, and when the field comment
// of max_message_bytes said 2 MiB.
func TestDocumentedDefaultsAreTheCode(t *testing.T) {
	comments := map[string]map[string]string{} // by package
	for page, tables := range documentedDefaults {
		seen := map[string]bool{}
		for _, d := range pageDefaults(t, page) {
			where := fmt.Sprintf("docs/configuration/%s:%d: %s", page, d.line, d.path)
			if d.table != "" {
				where += " (" + d.table + ")"
			}
			want, ok := tables[d.table][d.path]
			if !ok {
				t.Errorf("%s: a documented default the test does not check: add it to documentedDefaults", where)
				continue
			}
			seen[d.table+"|"+d.path] = true
			if same, err := sameValue(d.value, want); !same {
				t.Errorf("%s: the page says %q, the code %v (%v)", where, d.value, want, err)
			}
			typ, ok := configTypes[page][d.table]
			if !ok {
				t.Errorf("%s: no Go type for table %q", where, d.table)
				continue
			}
			field, holder, ok := jsonField(typ, d.path)
			if !ok {
				t.Errorf("%s: not a JSON field of %v", where, typ)
				continue
			}
			if comments[holder.PkgPath()] == nil {
				comments[holder.PkgPath()] = fieldComments(t, holder.PkgPath())
			}
			doc := comments[holder.PkgPath()][holder.Name()+"."+field.Name]
			if m := commentDefault.FindStringSubmatch(doc); m != nil {
				if same, err := sameValue(m[1], want); !same && err == nil {
					t.Errorf("%s: the field's comment (%s.%s) says Default %s, the code %v", where, holder.Name(), field.Name, m[1], want)
				}
			}
		}
		for table, defaults := range tables {
			for path := range defaults {
				if !seen[table+"|"+path] {
					t.Errorf("docs/configuration/%s: gives no default for %s (table %q)", page, path, table)
				}
			}
		}
	}
}
