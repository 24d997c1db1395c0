package integration

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Traces (docs/operations.md, "Traces"): the demo with Caddy's tracing
// directive on the query service's and the gateway's routes, exporting
// with OTLP over HTTP to a receiver of the test's own, and a second query
// service (prefix /subject) and gateway (/ws-subject) with trace_subject
// on.

// traceConfig is the demo with tracing on the query services and the
// gateways, and a second query service under /subject and gateway on
// /ws-subject that put the subject on their spans.
func traceConfig(t *testing.T) string {
	t.Helper()
	return demoVariant(t, "traces",
		configEdit{anchor: anchorSite, insert: "\t@traced path /query /query/* /subject/query /subject/query/* /ws /ws-subject\n\ttracing @traced\n"},
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
	gatehouse_ws /ws-subject {
		upstream ws://127.0.0.1:{$GATEHOUSE_BACKEND_PORT}/
		trace_subject
	}
`})
}

// TestTraces runs a query on each query service of traceConfig, and a
// socket on each gateway (authenticated; on /ws re-authenticated and its
// token revoked too; closed), and checks the spans the receiver got: the
// query's and the upgrade's, children of Caddy's span of the request, the
// query's steps, the re-authentication's, the lapse's and the closes'
// spans each the root of a trace linked to its socket's upgrade, their
// attributes, the client always and the subject only where trace_subject
// is on; and, in every span received, no token. The link assertions
// failed with the links left out, and the last with the token put on the
// query's span and on the re-authentication's.
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

	t.Run("gateway", func(t *testing.T) {
		// /ws-subject (trace_subject): authenticated, then closed.
		other := g.PasswordGrant(t, "demo", "demo")
		cs, resp, err := dialWS(t, g, "/ws-subject?version=1.1", "ServiceJson", "")
		if err != nil {
			t.Fatalf("dial /ws-subject: %v (%v)", err, resp)
		}
		ls := watch(t, "ws-subject", cs)
		if m := ls.request(authTokenMsg("1", other.AccessToken), "1"); identify(t, m).Result != "Success" {
			t.Fatalf("AuthToken on /ws-subject: %s", m)
		}
		closeNormally(t, ls)

		// /ws: authenticated, re-authenticated, its token revoked (the
		// lapse), closed.
		c := liveSession(t, g, "traced", demo.AccessToken)
		if m := c.request(authTokenMsg("2", demo.AccessToken), "2"); identify(t, m).Result != "Success" {
			t.Fatalf("re-authentication: %s", m)
		}
		resp2, body := g.Revoke(t, demo.AccessToken)
		wantStatus(t, "revoking the access token", resp2, body, 200)
		c.next("the Identify push of the revocation", liveTimeout, (*liveMsg).identifyPush)
		closeNormally(t, c)

		const scope = "github.com/gatehouse/gatehouse/wsauth"
		ups := o.Wait(t, "of the two upgrades", 2, named("gatehouse.ws.upgrade"))
		closes := o.Wait(t, "of the two closes", 2, named("gatehouse.ws.close"))
		reauth := o.Wait(t, "of the re-authentication", 1, named("gatehouse.ws.reauthenticate"))[0]
		lapse := o.Wait(t, "of the lapse", 1, named("gatehouse.ws.lapse"))[0]
		for _, up := range ups {
			a := up.attrs()
			path := "/ws"
			if a["gatehouse.subject"] != "" {
				path = "/ws-subject"
			}
			if up.Scope != scope || a["gatehouse.ws.outcome"] != "authenticated" || a["gatehouse.ws.auth_method"] != "auth_token" || a["gatehouse.client_id"] != publicClient {
				t.Errorf("%s: the upgrade's span: %s %v", path, up.Scope, a)
			}
			parent := o.Wait(t, "that are the upgrade's parent", 1, up.parentIs)[0]
			if parent.attrs()["url.path"] != path {
				t.Errorf("the upgrade's parent: %s %v, want Caddy's span of GET %s", parent.GetName(), parent.attrs(), path)
			}
		}
		// Which upgrade is whose: the one with the subject is /ws-subject's.
		var plain, subj *span
		for _, up := range ups {
			if up.attrs()["gatehouse.subject"] == "" {
				plain = up
			} else {
				subj = up
			}
		}
		if plain == nil || subj == nil || subj.attrs()["gatehouse.subject"] != demoID {
			t.Fatalf("want one upgrade with the subject %s and one without: %s", demoID, o.summary())
		}
		for what, want := range map[*span]map[string]string{
			reauth: {"gatehouse.ws.auth_result": "success", "gatehouse.ws.was_lapsed": "false", "gatehouse.client_id": publicClient},
			lapse:  {"gatehouse.ws.reason": "revoked", "gatehouse.client_id": publicClient},
		} {
			a := what.attrs()
			for k, v := range want {
				if a[k] != v {
					t.Errorf("%s: %s = %q, want %q", what.GetName(), k, a[k], v)
				}
			}
			if _, ok := a["gatehouse.subject"]; ok {
				t.Errorf("%s carries the subject without trace_subject", what.GetName())
			}
			if len(what.GetParentSpanId()) != 0 || !what.linksTo(plain) || bytes.Equal(what.GetTraceId(), plain.GetTraceId()) {
				t.Errorf("%s is not the root of a trace of its own linked to the upgrade's span", what.GetName())
			}
		}
		for _, cl := range closes {
			a := cl.attrs()
			up, subject := plain, ""
			if cl.linksTo(subj) {
				up, subject = subj, demoID
			}
			if !cl.linksTo(up) || len(cl.GetParentSpanId()) != 0 {
				t.Errorf("a close's span is not linked to its upgrade's")
			}
			if a["gatehouse.ws.closed_by"] != "client" || a["gatehouse.ws.close_code"] != "1000" || a["gatehouse.client_id"] != publicClient || a["gatehouse.subject"] != subject {
				t.Errorf("a close's span: %v, want the client's 1000 and the subject %q", a, subject)
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

// closeNormally closes l's socket with 1000 and waits for the gateway's
// answer.
func closeNormally(t *testing.T, l *liveConn) {
	t.Helper()
	if err := l.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(wsTimeout)); err != nil {
		t.Fatalf("%s: close: %v", l.name, err)
	}
	if code, _ := l.closed(wsTimeout); code != websocket.CloseNormalClosure {
		t.Fatalf("%s: the gateway answered the close with %d", l.name, code)
	}
}

// parentIs reports whether sp is the span's parent.
func (sp *span) parentIs(parent *span) bool { return sp.childOf(parent) }
