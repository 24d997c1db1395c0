package iqengine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/iqengine"
)

// TestRowsBeforeBadColumns: in the upstream's documented order, Rows come
// before Columns, and rows are passed on as they are read, so a Columns
// that fails the check (here out of place) after a result's first 32 KiB
// can only cut the result short: 200, a body that is not JSON, and the
// trailer bad_gateway; a smaller result is a 502. (A hostile upstream can
// put anything in the asked columns anyway: the check catches one that
// ignored the select list, and is no filter.)
func TestRowsBeforeBadColumns(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"Rows":[`)
	for i := range 3 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `["SECRET-%d-%s",1]`, i, strings.Repeat("x", 20000))
	}
	// Columns out of place: Code and LastPrice swapped (or any wrong shape).
	b.WriteString(`],"Columns":{"Code":{"Index":1},"LastPrice":{"Index":0}}}`)
	up := hostile(t, answerWith(b.String()))
	srv := atkService(t, up, nil, nil)
	status, trailer, body := selectWithTrailer(t, srv, "select Code, LastPrice from Security")
	if status != http.StatusOK || trailer != queryproxy.CodeBadGateway || json.Valid(body) {
		t.Errorf("a large answer whose Columns fails the check: %d, trailer %q, %d bytes", status, trailer, len(body))
	}
	small := hostile(t, answerWith(`{"Rows":[["BHP",1]],"Columns":{"Code":{"Index":1},"LastPrice":{"Index":0}}}`))
	if status, body := post(t, atkService(t, small, nil, nil), "/query", iqlType, "select Code, LastPrice from Security"); status != http.StatusBadGateway {
		t.Errorf("a small answer whose Columns fails the check: %d %s", status, body)
	}
}

// TestConnectionLostMidAnswer: a connection lost while the answer is read
// (a body shorter than its Content-Length) is 503, as any connection
// failure, not a bad answer (it was 502 when the body's early end was
// taken for the answer's).
func TestConnectionLostMidAnswer(t *testing.T) {
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "1000")
		_, _ = io.WriteString(w, `{"Rows":[["BHP",1]`)
	})
	srv := atkService(t, up, nil, nil)
	status, body := post(t, srv, "/query", iqlType, "select Code, LastPrice from Security")
	if status != http.StatusServiceUnavailable {
		t.Errorf("connection lost mid-answer: %d %s, docs/configuration/gatehouse_query.md says connection failures are 503", status, body)
	}
}

func fwd(t *testing.T, url string, client *http.Client, timeout time.Duration) *iqengine.Engine {
	t.Helper()
	e, err := iqengine.New(iqengine.Config{URL: url, Catalog: catalog, Timeout: timeout, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func insert() engine.ForwardRequest {
	return engine.ForwardRequest{IQL: "INSERT INTO Order (Code) VALUES ('A')", Token: "t", Write: true}
}

// TestInsertAnswered5xxFateUnknown: a 502, 503 or 504 to an insert may come
// from a proxy in front of the upstream, whose backend may still run it,
// and a 500 from an upstream that failed in its midst: the insert's fate
// is unknown (ErrFateUnknown), not "not applied"; a 4xx applied nothing.
func TestInsertAnswered5xxFateUnknown(t *testing.T) {
	for _, st := range []int{502, 504, 500, 503, 400, 403, 409} {
		up := hostile(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.ReadAll(r.Body); w.WriteHeader(st) })
		_, err := fwd(t, up.URL, nil, time.Second).Forward(context.Background(), insert())
		if unknown := st >= 500; errors.Is(err, engine.ErrFateUnknown) != unknown || err == nil {
			t.Errorf("upstream %d to an insert: %v, fate unknown %v", st, err, unknown)
		}
	}
}

// TestInsert200BadBodyFateUnknown: a 200 to an insert that is not
// {"RowsAffected": n} says the upstream ran it, not how: its fate is
// unknown.
func TestInsert200BadBodyFateUnknown(t *testing.T) {
	up := hostile(t, answerWith(`{"Affected":1}`))
	_, err := fwd(t, up.URL, nil, time.Second).Forward(context.Background(), insert())
	if !errors.Is(err, engine.ErrFateUnknown) {
		t.Errorf("200 with an unexpected body to an insert: %v, not ErrFateUnknown", err)
	}
}

// TestInsertTLSFailureNotSent: a TLS handshake refused sends nothing: the
// insert was not applied (it was called "may have been applied" when any
// error but a refused dial was).
func TestInsertTLSFailureNotSent(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("received") }))
	defer up.Close()
	_, err := fwd(t, up.URL, nil, time.Second).Forward(context.Background(), insert())
	if errors.Is(err, engine.ErrFateUnknown) {
		t.Errorf("certificate refused before anything was sent: %v", err)
	}
}

// TestInsertDialRefusedNotSent: a refused connection sends nothing: the
// insert was not applied, and the upstream is unavailable.
func TestInsertDialRefusedNotSent(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err := fwd(t, "http://"+addr, nil, time.Second).Forward(context.Background(), insert())
	if errors.Is(err, engine.ErrFateUnknown) || !errors.Is(err, engine.ErrUnavailable) {
		t.Errorf("dial refused: %v", err)
	}
}

// TestNumbersVerbatim: a number in an answer is passed on as the upstream
// spelled it, digits and exponent, whatever the column's type (the values
// are the upstream's; only the shape is checked).
func TestNumbersVerbatim(t *testing.T) {
	up := hostile(t, answerWith(`{"Rows":[[1E400,-0],["x",123456789012345678901234567890]],"Columns":{"Code":{"Index":0},"LastPrice":{"Index":1}}}`))
	srv := atkService(t, up, nil, nil)
	status, body := post(t, srv, "/query", iqlType, "select Code, LastPrice from Security")
	want := `{"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Index":1,"Type":"Decimal"}},"Rows":[[1E400,-0],["x",123456789012345678901234567890]]}`
	if status != http.StatusOK || body != want {
		t.Errorf("%d %s\nwant 200 %s", status, body, want)
	}
}

// TestAnswerInvalidText: a lone surrogate escape in a value, or invalid
// UTF-8 in a descriptor member the check skips, is a 502; a member given
// twice in a descriptor, which the check skips, is not.
func TestAnswerInvalidText(t *testing.T) {
	for _, tt := range []struct {
		ans  string
		want int
	}{
		{`{"Rows":[["\ud800",1]],"Columns":{"Code":{"Index":0},"LastPrice":{"Index":1}}}`, http.StatusBadGateway},
		{`{"Rows":[],"Columns":{"Code":{"Index":0,"X":"` + "\xff" + `"},"LastPrice":{"Index":1}}}`, http.StatusBadGateway},
		{`{"Rows":[],"Columns":{"Code":{"Index":0,"X":1,"X":2},"LastPrice":{"Index":1}}}`, http.StatusOK},
	} {
		up := hostile(t, answerWith(tt.ans))
		srv := atkService(t, up, nil, nil)
		if status, body := post(t, srv, "/query", iqlType, "select Code, LastPrice from Security"); status != tt.want {
			t.Errorf("%q: %d %s, want %d", tt.ans, status, body, tt.want)
		}
	}
}

// TestAnswerSizeBound: an answer of exactly max_answer_size is read; one
// byte more is a 502.
func TestAnswerSizeBound(t *testing.T) {
	ans := `{"Rows":[],"Columns":{"Code":{"Index":0},"LastPrice":{"Index":1}}}`
	for _, tt := range []struct {
		max  int64
		want int
	}{{int64(len(ans)), 200}, {int64(len(ans)) - 1, 502}} {
		up := hostile(t, answerWith(ans))
		srv := atkService(t, up, func(c *iqengine.Config) { c.MaxAnswerBytes = tt.max }, nil)
		status, body := post(t, srv, "/query", iqlType, "select Code, LastPrice from Security")
		if status != tt.want {
			t.Errorf("max %d: %d %s", tt.max, status, body)
		}
	}
}

// TestMultiRowInsertWrittenOut: the bound on numbers' growth written out
// is a structured insert's as a whole, however many rows: 600 rows of
// sixteen 1e4095 are refused (413) having allocated little (it was per row:
// 78 MB, and 39 MB of bind arguments on a SQL engine).
func TestMultiRowInsertWrittenOut(t *testing.T) {
	up := hostile(t, answerWith(`{"RowsAffected":1}`))
	srv := atkService(t, up, nil, nil)
	var b strings.Builder
	b.WriteString("[")
	for r := range 600 {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{")
		for c := range 16 {
			if c > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"C%d":1e4095`, c)
		}
		b.WriteString("}")
	}
	b.WriteString("]")
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	status, body := post(t, srv, "/query/Order/insert", "application/json", b.String())
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("body %d bytes -> %d %.120s; allocated %d MB", b.Len(), status, body, alloc>>20)
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d %s, want 413", status, body)
	}
	if alloc > 16<<20 {
		t.Errorf("a %d-byte structured insert allocated %d MB of written-out values (bound 64 KiB per statement)", b.Len(), alloc>>20)
	}
}

// TestStatementOfLongValues: 16 values of 1e4095 grow by 65,440 bytes
// written out, under the bound on that growth (64 KiB); the statement
// forwarded holds them and its syntax, under twice the bound.
func TestStatementOfLongValues(t *testing.T) {
	var got int64
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"Columns":{"Code":{"Index":0}},"Rows":[]}`)
	})
	srv := atkService(t, up, nil, nil)
	vals := strings.TrimSuffix(strings.Repeat("1e4095,", 16), ",")
	status, _ := post(t, srv, "/query/Security/select?columns=Code", "application/json", `[{"ColumnName":"LastPrice","Operator":"IN","Value":[`+vals+`]}]`)
	if status != http.StatusOK || got < 64<<10 || got > 2*64<<10 {
		t.Errorf("status %d; upstream received a %d-byte statement", status, got)
	}
}

// TestEarlyStopEndsUpstream: an endless answer stopped by max_rows ends the
// upstream request at once, and leaves no goroutine behind.
func TestEarlyStopEndsUpstream(t *testing.T) {
	done := make(chan struct{}, 100)
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"Rows":[["a",1]`)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, strings.Repeat(`,["a",1]`, 1000)); err != nil {
				return
			}
		}
	})
	srv := atkService(t, up, func(c *iqengine.Config) { c.Timeout = 20 * time.Second }, nil)
	status, _ := post(t, srv, "/query", iqlType, "select Code, LastPrice from Security")
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("upstream still writing after the result was refused")
	}
	g0 := runtime.NumGoroutine()
	for range 20 {
		post(t, srv, "/query", iqlType, "select Code, LastPrice from Security")
		<-done
	}
	time.Sleep(200 * time.Millisecond)
	t.Logf("status %d; goroutines %d -> %d", status, g0, runtime.NumGoroutine())
	if runtime.NumGoroutine() > g0+6 {
		t.Errorf("goroutines grew %d -> %d", g0, runtime.NumGoroutine())
	}
}
