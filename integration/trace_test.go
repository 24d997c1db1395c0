package integration

import (
	"strings"
	"testing"
)

// Traces (docs/operations.md, "Traces"): the demo with Caddy's tracing
// directive on the query service's and the gateway's routes, exporting
// with OTLP over HTTP to a receiver of the test's own, and a second query
// service (prefix /subject) with trace_subject on.

// traceConfig is the demo with tracing on /query and /subject/query, and
// a second query service under /subject that puts the subject on its
// spans.
func traceConfig(t *testing.T) string {
	t.Helper()
	return demoVariant(t, "traces",
		configEdit{anchor: anchorSite, insert: "\t@traced path /query /query/* /subject/query /subject/query/*\n\ttracing @traced\n"},
		configEdit{anchor: anchorWS, before: true, insert: `	gatehouse_query {
		prefix /subject
		engine sqlite {$GATEHOUSE_QUERY_DB:} {
			init_file examples/querydb/demo.sql
		}
		table Security {
			read Service/Market
		}
		trace_subject
	}
`})
}

// TestTraces runs a query on each query service of traceConfig and checks
// the spans the receiver got: the query's, a child of Caddy's span of the
// request, with its steps, its attributes, the client always and the
// subject only where trace_subject is on; and, in every span received,
// no token.
func TestTraces(t *testing.T) {
	t.Parallel()
	o := newOTLPReceiver(t)
	g := StartGatehouseWith(t, Options{Config: traceConfig(t), Env: o.Env()})
	demo := g.PasswordGrant(t, "demo", "demo")
	demoID := subjectOf(t, "demo")

	t.Run("query", func(t *testing.T) {
		for _, tt := range []struct {
			prefix  string
			subject bool
		}{{"", false}, {"/subject", true}} {
			stmt := `select Code, LastPrice from Security where Code = 'BHP' and Exchange = 'ASX'`
			resp, r, body := g.query(t, demo.AccessToken, tt.prefix+"/query", iqlType, stmt, "Request-Id", "trace"+tt.prefix)
			if resp.StatusCode != 200 || len(r.Rows) != 1 {
				t.Fatalf("%s/query: %d %s", tt.prefix, resp.StatusCode, body)
			}
			endpoint := "query"
			query := o.Wait(t, "of the query on "+tt.prefix+"/query", 1, func(sp *span) bool {
				return sp.GetName() == "gatehouse.query" && sp.attrs()["gatehouse.subject"] != "" == tt.subject
			})[0]
			if query.Scope != "github.com/gatehouse/gatehouse/queryproxy" {
				t.Errorf("the query span's scope is %q", query.Scope)
			}
			got := query.attrs()
			want := map[string]string{
				"gatehouse.query.endpoint": endpoint, "gatehouse.query.table": "Security", "gatehouse.query.kind": "select",
				"gatehouse.query.engine": "sqlite", "gatehouse.query.outcome": "ok", "gatehouse.query.rows": "1",
				"gatehouse.client_id": publicClient,
			}
			if tt.subject {
				want["gatehouse.subject"] = demoID
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s/query: %s = %q, want %q", tt.prefix, k, got[k], v)
				}
			}
			if _, ok := got["gatehouse.subject"]; ok != tt.subject {
				t.Errorf("%s/query: gatehouse.subject present %t, want %t (trace_subject)", tt.prefix, ok, tt.subject)
			}
			if !strings.HasSuffix(got["gatehouse.query.target"], "query.db") {
				t.Errorf("%s/query: gatehouse.query.target = %q, want the database file", tt.prefix, got["gatehouse.query.target"])
			}
			parents := o.Wait(t, "that are the query's parent", 1, query.parentIs)
			if parents[0].GetName() == "" || parents[0].Scope == query.Scope {
				t.Errorf("the query span's parent is %q (%s), not Caddy's span of the request", parents[0].GetName(), parents[0].Scope)
			}
			for _, step := range []string{"gatehouse.query.parse", "gatehouse.query.authorize", "gatehouse.query.engine"} {
				o.Wait(t, step+" under the query", 1, func(sp *span) bool { return sp.GetName() == step && sp.childOf(query) })
			}
		}
	})

	// Last: every span received so far, Caddy's own included, holds no
	// token (nor a value of the statements) in any attribute, event, link
	// or status.
	t.Run("no token", func(t *testing.T) {
		secrets := append(g.Secrets(), demo.AccessToken, demo.RefreshToken, "BHP", "ASX")
		for _, sp := range o.Spans() {
			for where, v := range sp.values() {
				for _, s := range secrets {
					if s != "" && strings.Contains(v, s) {
						t.Errorf("span %s, %s (%d bytes) holds a secret or a value of a statement (%d bytes)", sp.GetName(), where, len(v), len(s))
					}
				}
			}
		}
	})
}

// parentIs reports whether sp is the span's parent.
func (sp *span) parentIs(parent *span) bool { return sp.childOf(parent) }
