package wsauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// tracedEnv is newLiveEnv behind a stand-in for Caddy's tracing
// directive: each request gets a span ("request") of a tracer provider of
// its own (not the global one, which stays a no-op), whose spans rec
// records.
func tracedEnv(t *testing.T, mod func(*Config)) (*testEnv, *testClock, *tracetest.SpanRecorder) {
	t.Helper()
	e, clock := newLiveEnv(t, mod)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e.srv.Close()
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tp.Tracer("caddy").Start(r.Context(), "request")
		defer span.End()
		e.gw.ServeHTTP(w, r.WithContext(ctx))
	}))
	return e, clock, rec
}

// ended are the spans rec has seen end, by name.
func ended(rec *tracetest.SpanRecorder) map[string][]sdktrace.ReadOnlySpan {
	m := map[string][]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		m[sp.Name()] = append(m[sp.Name()], sp)
	}
	return m
}

// spanAttrs are a span's attributes as text.
func spanAttrs(sp sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range sp.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// linkedTo reports whether sp is the root of a trace of its own, linked
// to target.
func linkedTo(sp sdktrace.ReadOnlySpan, target trace.SpanContext) bool {
	if sp.Parent().IsValid() || sp.SpanContext().TraceID() == target.TraceID() {
		return false
	}
	for _, l := range sp.Links() {
		if l.SpanContext.Equal(target) {
			return true
		}
	}
	return false
}

// TestTraceSocket: a traced socket's upgrade span is a child of the
// request's and ends once the socket is authenticated, with an event per
// attempt; each re-authentication (accepted or refused), the lapse and the
// close is a short span of a trace of its own, linked to the upgrade's.
// The client is on each; the subject only with TraceSubject; never a
// token. It failed with the lapse's span started without its link, and
// with the token put on the re-authentication's span.
func TestTraceSocket(t *testing.T) {
	for _, subject := range []bool{false, true} {
		t.Run(map[bool]string{false: "client only", true: "subject too"}[subject], func(t *testing.T) {
			e, clock, rec := tracedEnv(t, func(c *Config) { c.TraceSubject = subject })
			c := e.dial(nil)
			if got := roundTrip(t, c, authToken("Bearer", "not-a-token")); !strings.Contains(got, `"Result":"Reject"`) {
				t.Fatalf("a bad token: %s", got)
			}
			if got := roundTrip(t, c, authToken("Bearer", tokDemo)); !strings.Contains(got, `"Result":"Success"`) {
				t.Fatalf("AuthToken: %s", got)
			}
			clock.set(testExpiry)
			eventually(t, "the expiry's span", func() bool { return len(ended(rec)[spanLapse]) == 1 })
			later := madeUpToken("u-demo", []string{"openid", policy.ScopeMarket}, 24*time.Hour)
			if got := roundTrip(t, c, authToken("Bearer", later)); !strings.Contains(got, `"Result":"Success"`) {
				t.Fatalf("re-authentication: %s", got)
			}
			other := madeUpToken("u-trader", []string{policy.ScopeMarket}, 24*time.Hour)
			if got := roundTrip(t, c, authToken("Bearer", other)); !strings.Contains(got, `"Result":"Reject"`) {
				t.Fatalf("another user's token: %s", got)
			}
			_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			closeCode(t, c)
			eventually(t, "the close's span", func() bool { return len(ended(rec)[spanClose]) == 1 })

			spans := ended(rec)
			if len(spans[spanUpgrade]) != 1 || len(spans["request"]) != 1 || len(spans[spanReauth]) != 2 {
				t.Fatalf("spans %v", spans)
			}
			up, req := spans[spanUpgrade][0], spans["request"][0]
			if up.Parent().SpanID() != req.SpanContext().SpanID() {
				t.Error("the upgrade's span is not the request's child")
			}
			if lapse := spans[spanLapse][0]; up.EndTime().After(lapse.StartTime()) {
				t.Error("the upgrade's span did not end when the socket was authenticated")
			}
			if a := spanAttrs(up); a["gatehouse.ws.outcome"] != "authenticated" || a["gatehouse.ws.auth_method"] != "auth_token" {
				t.Errorf("upgrade: %v", a)
			}
			var results []string
			for _, ev := range up.Events() {
				for _, kv := range ev.Attributes {
					if kv.Key == attrResult {
						results = append(results, kv.Value.String())
					}
				}
			}
			if strings.Join(results, ",") != "reject,success" {
				t.Errorf("the upgrade's attempts: %v", results)
			}
			want := map[string]map[string]string{
				spanLapse: {"gatehouse.ws.reason": "expired"},
				spanClose: {"gatehouse.ws.closed_by": "client", "gatehouse.ws.close_code": "1000", "gatehouse.ws.state": "authenticated"},
			}
			for _, sp := range spans[spanReauth] {
				a := spanAttrs(sp)
				switch a["gatehouse.ws.auth_result"] {
				case "success":
					if a["gatehouse.ws.was_lapsed"] != "true" || a["gatehouse.ws.auth_method"] != "auth_token" {
						t.Errorf("the re-authentication: %v", a)
					}
				case "reject":
					if a["gatehouse.ws.reason"] != "another subject than the session's" {
						t.Errorf("the refused re-authentication: %v", a)
					}
				default:
					t.Errorf("a re-authentication's span: %v", a)
				}
			}
			for _, sp := range append(append(spans[spanReauth], spans[spanLapse]...), spans[spanClose]...) {
				if !linkedTo(sp, up.SpanContext()) {
					t.Errorf("%s is not a root linked to the upgrade's span", sp.Name())
				}
				if sp.EndTime().Sub(sp.StartTime()) > 5*time.Second {
					t.Errorf("%s lasted %v", sp.Name(), sp.EndTime().Sub(sp.StartTime()))
				}
			}
			for _, sp := range append(append(append(spans[spanReauth], spans[spanLapse]...), spans[spanClose]...), up) {
				a := spanAttrs(sp)
				for k, v := range want[sp.Name()] {
					if a[k] != v {
						t.Errorf("%s: %s = %q, want %q", sp.Name(), k, a[k], v)
					}
				}
				if a["gatehouse.client_id"] != "demo-app" {
					t.Errorf("%s: no client: %v", sp.Name(), a)
				}
				if got, ok := a["gatehouse.subject"]; ok != subject || ok && got != "u-demo" {
					t.Errorf("%s: subject %q (present %t, want %t)", sp.Name(), got, ok, subject)
				}
			}
			for _, sp := range rec.Ended() {
				for _, kv := range sp.Attributes() {
					for _, tok := range []string{tokDemo, other, later, "not-a-token"} {
						if strings.Contains(kv.Value.String(), tok) {
							t.Errorf("%s: %s holds a token", sp.Name(), kv.Key)
						}
					}
				}
			}
		})
	}
}

// TestTraceRefusedUpgrade: an upgrade refused before the 101 ends its
// span with the status; a socket closed before it authenticated ends it
// as closed, with a close span.
func TestTraceRefusedUpgrade(t *testing.T) {
	e, _, rec := tracedEnv(t, nil)
	if _, resp, err := e.tryDial(bearer("not-a-token"), nil); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a bad Authorization header: %v %v", err, resp)
	}
	c := e.dial(nil)
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), time.Now().Add(time.Second))
	closeCode(t, c)
	eventually(t, "the close's span", func() bool { return len(ended(rec)[spanClose]) == 1 })
	ups := ended(rec)[spanUpgrade]
	if len(ups) != 2 {
		t.Fatalf("%d upgrade spans", len(ups))
	}
	if a := spanAttrs(ups[0]); a["gatehouse.ws.outcome"] != "refused" || a["gatehouse.ws.status"] != "403" {
		t.Errorf("the refused upgrade: %v", a)
	}
	if a := spanAttrs(ups[1]); a["gatehouse.ws.outcome"] != "closed" || a["gatehouse.ws.close_code"] != "1001" {
		t.Errorf("the unauthenticated socket: %v", a)
	}
	cl := ended(rec)[spanClose][0]
	if a := spanAttrs(cl); a["gatehouse.ws.state"] != string(StateUnauthenticated) || a["gatehouse.ws.closed_by"] != "client" || a["gatehouse.client_id"] != "" {
		t.Errorf("the close: %v", a)
	}
	if !linkedTo(cl, ups[1].SpanContext()) {
		t.Error("the close is not linked to the upgrade")
	}
}

// TestUntracedSocketAllocatesNothing: a socket whose upgrade is not traced
// (no span: Caddy's tracing directive is off; or one the sampler left
// out) costs its trace nothing, not an allocation. It failed when
// startUpgrade went on without its IsRecording check.
func TestUntracedSocketAllocatesNothing(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	unsampled, span := tp.Tracer("caddy").Start(context.Background(), "request")
	defer span.End()
	id := &Identity{Subject: "u", ClientID: "c"}
	for name, ctx := range map[string]context.Context{"no span": context.Background(), "not sampled": unsampled} {
		r := httptest.NewRequest("GET", "/ws", nil).WithContext(ctx)
		now := time.Now()
		allocs := testing.AllocsPerRun(100, func() {
			tr := startUpgrade(r, true)
			tr.attempt(AuthTokenMsg, AuthResultNo, "expired")
			tr.authenticated(id)
			tr.reauthenticated(now, AuthTokenMsg, AuthResultOK, "", id, true, 1, 0)
			tr.lapsed(LapseRevoked, "revoked", id)
			tr.closed(now, "client", 1000, StateAuthenticated, time.Second, id)
			tr.refused(403)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations a socket", name, allocs)
		}
		if tr := startUpgrade(r, true); tr.on() {
			t.Errorf("%s: traced", name)
		}
	}
}
