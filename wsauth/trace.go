package wsauth

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// A socket's trace, when its upgrade request is traced (Caddy's tracing
// directive): a span for the upgrade and the socket's authentication,
// a child of the request's, which ends once the session is authenticated
// (or refused, or closed before it was); then one short span for each
// later event of the session (a re-authentication, a lapse, the close),
// each the root of a trace of its own, linked to the upgrade's span. A
// span open for the socket's whole life would be exported only when the
// socket ends, hours later or never. Their attributes name the client
// and, when Config.TraceSubject says so, the subject; never a token, a
// secret, a message's content or a topic. docs/operations.md, "Traces",
// lists them.

// tracerName is the instrumentation scope of the gateway's spans.
const tracerName = "github.com/gatehouse/gatehouse/wsauth"

// The spans' names.
const (
	spanUpgrade = "gatehouse.ws.upgrade"
	spanReauth  = "gatehouse.ws.reauthenticate"
	spanLapse   = "gatehouse.ws.lapse"
	spanClose   = "gatehouse.ws.close"
)

// The attributes' keys.
const (
	attrOutcome      = attribute.Key("gatehouse.ws.outcome")     // the upgrade's: authenticated, refused, closed
	attrStatus       = attribute.Key("gatehouse.ws.status")      // the HTTP status of an upgrade refused before the 101
	attrMethod       = attribute.Key("gatehouse.ws.auth_method") // AuthMethod
	attrResult       = attribute.Key("gatehouse.ws.auth_result") // AuthResultOK, AuthResultNo, AuthResultErr
	attrReason       = attribute.Key("gatehouse.ws.reason")      // a refusal's or a lapse's, in the gateway's fixed wording
	attrRefusal      = attribute.Key("gatehouse.ws.refusal")     // the verifier's reason for a revocation
	attrWasLapsed    = attribute.Key("gatehouse.ws.was_lapsed")
	attrResubscribed = attribute.Key("gatehouse.ws.resubscribed")
	attrSubsEnded    = attribute.Key("gatehouse.ws.subscriptions_ended")
	attrCloseCode    = attribute.Key("gatehouse.ws.close_code")
	attrClosedBy     = attribute.Key("gatehouse.ws.closed_by") // gateway, client, connection
	attrState        = attribute.Key("gatehouse.ws.state")     // the session's State when it closed
	attrLifetime     = attribute.Key("gatehouse.ws.session_seconds")
	attrClient       = attribute.Key("gatehouse.client_id")
	attrSubject      = attribute.Key("gatehouse.subject")
)

// eventAuth is the upgrade span's event for each authentication attempt
// before the socket is authenticated.
const eventAuth = "gatehouse.ws.auth"

// sockTrace is a socket's trace. Its zero value, for a socket whose upgrade
// is not traced, does nothing and allocates nothing. tracer, subject, link
// and began are set before the session starts and only read after;
// upgrade is ServeHTTP's until the session runs, then the client reader's,
// as are method and authAt.
type sockTrace struct {
	tracer  trace.Tracer // nil: not traced
	subject bool         // Config.TraceSubject
	link    trace.Link   // to the upgrade's span
	began   time.Time    // when the socket was upgraded (newSession)
	upgrade trace.Span   // open until the socket is authenticated, refused or closed; nil after
	method  AuthMethod   // the last authentication attempt's, for the upgrade span
	authAt  time.Time    // when the Auth message being answered arrived (handleAuth)
}

// startUpgrade starts the upgrade's span when r's own span records (Caddy's
// tracing directive is on and sampled the request), with the tracer of that
// span's provider: Caddy's tracing has a provider of its own, not the
// global one.
func startUpgrade(r *http.Request, subject bool) sockTrace {
	parent := trace.SpanFromContext(r.Context())
	if !parent.IsRecording() {
		return sockTrace{}
	}
	t := sockTrace{tracer: parent.TracerProvider().Tracer(tracerName), subject: subject}
	_, t.upgrade = t.tracer.Start(r.Context(), spanUpgrade)
	t.link = trace.Link{SpanContext: t.upgrade.SpanContext()}
	return t
}

// on reports whether the socket is traced: callers build attributes only
// then.
func (t *sockTrace) on() bool { return t.tracer != nil }

// who are the attributes that name id: its client, and its subject when
// configured.
func (t *sockTrace) who(id *Identity) []attribute.KeyValue {
	kv := []attribute.KeyValue{attrClient.String(id.ClientID)}
	if t.subject && id.Subject != "" {
		kv = append(kv, attrSubject.String(id.Subject))
	}
	return kv
}

// refused ends the upgrade's span for a request answered status before
// the 101.
func (t *sockTrace) refused(status int) {
	if t.upgrade == nil {
		return
	}
	t.upgrade.SetAttributes(attrOutcome.String("refused"), attrStatus.Int(status))
	if status >= 500 {
		t.upgrade.SetStatus(codes.Error, http.StatusText(status))
	}
	t.upgrade.End()
	t.upgrade = nil
}

// attempt notes an authentication attempt of the socket before it is
// authenticated: an event of the upgrade's span. reason is "" for an
// identity accepted.
func (t *sockTrace) attempt(method AuthMethod, result, reason string) {
	if t.upgrade == nil {
		return
	}
	t.method = method
	kv := []attribute.KeyValue{attrMethod.String(string(method)), attrResult.String(result)}
	if reason != "" {
		kv = append(kv, attrReason.String(reason))
	}
	t.upgrade.AddEvent(eventAuth, trace.WithAttributes(kv...))
}

// authenticated ends the upgrade's span: the session is authenticated as
// id, its backend leg open.
func (t *sockTrace) authenticated(id *Identity) {
	if t.upgrade == nil {
		return
	}
	t.upgrade.SetAttributes(append(t.who(id), attrOutcome.String("authenticated"), attrMethod.String(string(t.method)))...)
	t.upgrade.End()
	t.upgrade = nil
}

// linked starts the span of a later event of the session, which began at
// began: the root of a trace of its own, linked to the upgrade's span.
// Callers check on first.
func (t *sockTrace) linked(name string, began time.Time, kv []attribute.KeyValue) trace.Span {
	_, sp := t.tracer.Start(context.Background(), name, trace.WithNewRoot(), trace.WithLinks(t.link),
		trace.WithAttributes(kv...), trace.WithTimestamp(began))
	return sp
}

// reauthenticated records a re-authentication of the live session (a
// fresh credential of the same subject, or one refused), which began at
// began.
func (t *sockTrace) reauthenticated(began time.Time, method AuthMethod, result, reason string, id *Identity, wasLapsed bool, resubscribed, ended int) {
	if !t.on() {
		return
	}
	kv := append(t.who(id), attrMethod.String(string(method)), attrResult.String(result))
	if reason != "" {
		kv = append(kv, attrReason.String(reason))
	} else {
		kv = append(kv, attrWasLapsed.Bool(wasLapsed), attrResubscribed.Int(resubscribed), attrSubsEnded.Int(ended))
	}
	sp := t.linked(spanReauth, began, kv)
	if result == AuthResultErr {
		sp.SetStatus(codes.Error, reason)
	}
	sp.End()
}

// lapsed records the lapse of id's authority (reason LapseExpired or
// LapseRevoked; refusal, the verifier's reason for a revocation).
func (t *sockTrace) lapsed(reason, refusal string, id *Identity) {
	if !t.on() {
		return
	}
	kv := append(t.who(id), attrReason.String(reason))
	if refusal != "" {
		kv = append(kv, attrRefusal.String(refusal))
	}
	t.linked(spanLapse, time.Now(), kv).End()
}

// closed records the socket's end: by whom ("gateway", "client", or
// "connection": it failed without a close frame), the close code (0 for
// none), the session's state then and how long it lived; id is nil for a
// socket never authenticated. It ends the upgrade's span too, if the
// socket was never authenticated. began is when the teardown began.
func (t *sockTrace) closed(began time.Time, by string, code int, state State, lived time.Duration, id *Identity) {
	if !t.on() {
		return
	}
	kv := []attribute.KeyValue{attrClosedBy.String(by), attrState.String(string(state)), attrLifetime.Float64(lived.Seconds())}
	if code != 0 {
		kv = append(kv, attrCloseCode.Int(code))
	}
	if id != nil {
		kv = append(kv, t.who(id)...)
	}
	if t.upgrade != nil {
		t.upgrade.SetAttributes(attrOutcome.String("closed"))
		if code != 0 {
			t.upgrade.SetAttributes(attrCloseCode.Int(code))
		}
		t.upgrade.End()
		t.upgrade = nil
	}
	sp := t.linked(spanClose, began, kv)
	if code == websocket.CloseInternalServerErr { // the gateway's own fault, or the backend's
		sp.SetStatus(codes.Error, "internal error")
	}
	sp.End()
}
