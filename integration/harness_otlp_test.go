package integration

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// traceTimeout bounds the wait for a span to reach the receiver: the
// process exports every otlpScheduleDelay, and a loaded machine may take
// a while.
const traceTimeout = 30 * time.Second

// otlpScheduleDelay is how often, in milliseconds, the gatehouse under
// test exports its spans (OTEL_BSP_SCHEDULE_DELAY; 5000 by default).
const otlpScheduleDelay = "100"

// otlpReceiver is an OTLP/HTTP trace receiver (http/protobuf, POST
// /v1/traces) on loopback: what a collector would be given by a gatehouse
// running Caddy's tracing directive. It keeps every span it was sent.
type otlpReceiver struct {
	t   testing.TB
	srv *httptest.Server

	mu    sync.Mutex
	spans []*span
	bad   []string // requests it could not read
}

// span is one span received, with its instrumentation scope.
type span struct {
	Scope string
	*tracepb.Span
}

// newOTLPReceiver starts a receiver, closed when the test ends.
func newOTLPReceiver(t testing.TB) *otlpReceiver {
	t.Helper()
	o := &otlpReceiver{t: t}
	o.srv = httptest.NewServer(http.HandlerFunc(o.export))
	t.Cleanup(func() {
		o.srv.Close()
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, b := range o.bad {
			t.Errorf("OTLP receiver: %s", b)
		}
	})
	return o
}

// Env is what a gatehouse needs in its environment to export its spans
// here, soon after they end (Caddy's tracing uses OpenTelemetry's
// autoexport, which reads these).
func (o *otlpReceiver) Env() []string {
	return []string{
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + o.srv.URL,
		"OTEL_BSP_SCHEDULE_DELAY=" + otlpScheduleDelay,
	}
}

// export answers one export request: ExportTraceServiceRequest in,
// ExportTraceServiceResponse out.
func (o *otlpReceiver) export(w http.ResponseWriter, r *http.Request) {
	fail := func(format string, args ...any) {
		o.mu.Lock()
		o.bad = append(o.bad, fmt.Sprintf(format, args...))
		o.mu.Unlock()
		http.Error(w, "bad request", http.StatusBadRequest)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		fail("%s %s", r.Method, r.URL.Path)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		fail("Content-Type %q", ct)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			fail("gzip: %v", err)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		fail("reading: %v", err)
		return
	}
	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		fail("decoding: %v", err)
		return
	}
	o.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				o.spans = append(o.spans, &span{Scope: ss.GetScope().GetName(), Span: sp})
			}
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Spans are the spans received so far.
func (o *otlpReceiver) Spans() []*span {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*span(nil), o.spans...)
}

// Wait returns the spans received once n of them match, waiting
// traceTimeout at most.
func (o *otlpReceiver) Wait(t testing.TB, what string, n int, match func(*span) bool) []*span {
	t.Helper()
	deadline := time.Now().Add(traceTimeout)
	for {
		var got []*span
		for _, sp := range o.Spans() {
			if match(sp) {
				got = append(got, sp)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d spans %s after %s; received: %s", len(got), n, what, traceTimeout, o.summary())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// summary names the spans received, for a failure's message.
func (o *otlpReceiver) summary() string {
	var b strings.Builder
	for _, sp := range o.Spans() {
		fmt.Fprintf(&b, "\n\t%s %s (parent %s) %v", sp.GetName(), sp.id(), hex.EncodeToString(sp.GetParentSpanId()), sp.attrs())
	}
	return b.String()
}

// named matches spans by name.
func named(name string) func(*span) bool {
	return func(sp *span) bool { return sp.GetName() == name }
}

// id is the span's id in hex.
func (sp *span) id() string { return hex.EncodeToString(sp.GetSpanId()) }

// childOf reports whether parent is sp's parent, in the same trace.
func (sp *span) childOf(parent *span) bool {
	return bytes.Equal(sp.GetTraceId(), parent.GetTraceId()) && bytes.Equal(sp.GetParentSpanId(), parent.GetSpanId())
}

// linksTo reports whether one of sp's links is to target's span context.
func (sp *span) linksTo(target *span) bool {
	for _, l := range sp.GetLinks() {
		if bytes.Equal(l.GetTraceId(), target.GetTraceId()) && bytes.Equal(l.GetSpanId(), target.GetSpanId()) {
			return true
		}
	}
	return false
}

// attrs are the span's attributes, each value as text.
func (sp *span) attrs() map[string]string {
	m := map[string]string{}
	for _, kv := range sp.GetAttributes() {
		m[kv.GetKey()] = anyText(kv.GetValue())
	}
	return m
}

// values are every attribute value of sp, its events' and its links' as
// text, with where each was found.
func (sp *span) values() map[string]string {
	m := map[string]string{}
	add := func(where string, kvs []*commonpb.KeyValue) {
		for _, kv := range kvs {
			m[where+kv.GetKey()] = anyText(kv.GetValue())
		}
	}
	add("", sp.GetAttributes())
	for _, e := range sp.GetEvents() {
		m["event "+e.GetName()] = ""
		add("event "+e.GetName()+" ", e.GetAttributes())
	}
	for i, l := range sp.GetLinks() {
		add("link "+strconv.Itoa(i)+" ", l.GetAttributes())
	}
	if st := sp.GetStatus(); st != nil {
		m["status message"] = st.GetMessage()
	}
	m["name"] = sp.GetName()
	return m
}

// anyText is an attribute value as text: arrays and maps with their
// members, so that a search of it searches them too.
func anyText(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BytesValue:
		return string(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, anyText(e))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case *commonpb.AnyValue_KvlistValue:
		var parts []string
		for _, kv := range x.KvlistValue.GetValues() {
			parts = append(parts, kv.GetKey()+"="+anyText(kv.GetValue()))
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	return ""
}
