package iqengine_test

// The answer reader (answer.go) against a hostile, compromised or merely
// buggy upstream: whatever it answers, the caller gets a result of the
// promised shape or a refusal, in bounded memory and time. A test that
// failed on the code it was written against says how; "(It held when
// written.)" marks a defence an attack found holding.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/iqengine"
)

// strictResult reads a select result the way a JavaScript client does
// (member names exact, case-sensitive) and checks it is the promised shape:
// one object of exactly Columns and Rows, the asked columns with the
// catalog's types, every row an array of len(cols) plain values, at most
// maxRows rows, valid UTF-8, nothing after it.
func strictResult(body []byte, cols [][2]string, maxRows int) string {
	if !utf8.Valid(body) {
		return "the body is not valid UTF-8"
	}
	if !json.Valid(body) {
		return "the body is not valid JSON"
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return "not an object"
	}
	for k := range top {
		if k != "Columns" && k != "Rows" {
			return fmt.Sprintf("unexpected member %q", k)
		}
	}
	var c map[string]map[string]json.RawMessage
	if err := json.Unmarshal(top["Columns"], &c); err != nil || len(c) != len(cols) {
		return fmt.Sprintf("Columns is %s", top["Columns"])
	}
	for i, want := range cols {
		got, ok := c[want[0]]
		if !ok || string(got["Index"]) != fmt.Sprint(i) || string(got["Type"]) != `"`+want[1]+`"` || len(got) != 2 {
			return fmt.Sprintf("column %s is %v", want[0], got)
		}
	}
	var rows [][]json.RawMessage
	if err := json.Unmarshal(top["Rows"], &rows); err != nil {
		return "Rows is not an array of arrays"
	}
	if len(rows) > maxRows {
		return fmt.Sprintf("%d rows, more than max_rows %d", len(rows), maxRows)
	}
	for i, r := range rows {
		if len(r) != len(cols) {
			return fmt.Sprintf("row %d has %d values for %d columns: %s", i, len(r), len(cols), bytes.Join(func() [][]byte {
				var out [][]byte
				for _, v := range r {
					out = append(out, v)
				}
				return out
			}(), []byte(",")))
		}
	}
	return ""
}

// TestAnswerOfPromisedShapeOnly: whatever the upstream answers, the caller
// gets a result of exactly the promised shape (docs/configuration/gatehouse_query.md: "exactly the asked
// columns, in order, and rows of that many plain values"), or a refusal:
// 502, or 422 for more rows than max_rows.
//
// Before its fix: the check decoded the answer with encoding/json (member
// names matched ignoring case, the last duplicate winning, unknown members
// ignored, a trailing ']' or '}' accepted by Decoder.More, invalid UTF-8
// passed) and then sent the upstream's bytes unchanged, so what the
// caller's parser read was not what was checked: each case was answered
// 200 with data outside the asked columns or the row bound, or with a body
// that is not JSON.
func TestAnswerOfPromisedShapeOnly(t *testing.T) {
	cols := `"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Index":1,"Type":"Decimal"}}`
	want := [][2]string{{"Code", "String"}, {"LastPrice", "Decimal"}}
	for _, tt := range []struct{ name, body string }{
		// A JS client reads "Rows" (3 values a row, the third a hidden
		// column); Go's check reads the last of "Rows"/"rows".
		{"Rows shadowed by rows", `{` + cols + `,"Rows":[["BHP",37.48,"SECRET-RoutingNote"]],"rows":[["BHP",37.48]]}`},
		// Row bound (max_rows 3) bypassed the same way.
		{"row bound shadowed", `{` + cols + `,"Rows":[["A",1],["B",2],["C",3],["D",4],["E",5],["F",6]],"ROWS":[]}`},
		// Unknown members are ignored by the check and passed on.
		{"extra member", `{` + cols + `,"Rows":[["BHP",37.48]],"RoutingNote":["SECRET-RoutingNote"]}`},
		// Extra members inside a column, and a Type that is not the catalog's.
		{"column descriptor", `{"Columns":{"Code":{"Index":0,"Type":"<img src=x onerror=alert(1)>","Secret":"SECRET"},"LastPrice":{"Index":1,"Type":"Decimal"}},"Rows":[]}`},
		// Decoder.More is false before ']' and '}': trailing bytes pass.
		{"trailing bracket and HTML", `{` + cols + `,"Rows":[]}]<script>alert(document.cookie)</script>`},
		// encoding/json does not validate UTF-8 inside strings.
		{"invalid UTF-8", `{` + cols + `,"Rows":[["B` + "\xff\xfe" + `",1]]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := hostile(t, answerWith(tt.body))
			srv := serviceOver(t, up, nil, nil)
			status, body := post(t, srv, "/query", iqlType, "select Code, LastPrice from Security")
			if status == http.StatusBadGateway || status == http.StatusUnprocessableEntity {
				return
			}
			if status != 200 {
				t.Fatalf("status %d %s", status, body)
			}
			if bad := strictResult([]byte(body), want, 3); bad != "" {
				t.Fatalf("answered 200 with an unchecked upstream body (%s):\n%s", bad, body)
			}
		})
	}
}

// TestAnswerMemoryBounded: a request whose answer passes max_rows fails, as
// any result past max_rows does (422 when nothing was sent yet, else the
// result cut short with the Gatehouse-Error trailer result_too_large),
// having allocated less than the answer's size: the answer is read as it
// arrives, and no more of it than max_rows and one row.
//
// Before its fix: the whole answer (up to max_answer_size, 64 MiB by
// default) was read into memory and every row copied into a
// []json.RawMessage before the row bound was checked: 167 MB allocated to
// refuse a 6 MB answer of one-value rows, 1.2 GB for one of 64 MiB; a
// caller who can name a large narrow table gets that from an honest
// upstream, 4 requests at a time per user.
func TestAnswerMemoryBounded(t *testing.T) {
	const rows = 1_000_000
	var ans bytes.Buffer
	ans.WriteString(`{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[`)
	for i := range rows {
		if i > 0 {
			ans.WriteByte(',')
		}
		ans.WriteString(`["A"]`)
	}
	ans.WriteString(`]}`)
	payload := ans.Bytes()
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(payload)
	})
	srv := serviceOver(t, up, nil, func(c *queryproxy.Config) { c.MaxRows = 10_000 })
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	status, trailer, body := selectWithTrailer(t, srv, "select Code from Security")
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("answer %d bytes, %d rows: status %d (trailer %q, %d bytes), allocated %d MB (%.1fx the answer)",
		len(payload), rows, status, trailer, len(body), alloc>>20, float64(alloc)/float64(len(payload)))
	if status != http.StatusUnprocessableEntity && (status != http.StatusOK || trailer != queryproxy.CodeResultTooLarge || json.Valid(body)) {
		t.Fatalf("status %d, trailer %q: %.300s", status, trailer, body)
	}
	if alloc > uint64(len(payload)) {
		t.Fatalf("refusing a %d-byte answer of %d rows (max_rows 10000) allocated %d bytes, %.1fx its size",
			len(payload), rows, alloc, float64(alloc)/float64(len(payload)))
	}
}

// TestAnswerSlowDripCut: an upstream that sends headers and then a byte a
// second is cut at the time limit (504), not held open.
// (It held when written.)
func TestAnswerSlowDripCut(t *testing.T) {
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[`)
		for {
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(200 * time.Millisecond):
				_, _ = io.WriteString(w, ` `)
			}
		}
	})
	srv := serviceOver(t, up, func(c *iqengine.Config) { c.Timeout = 700 * time.Millisecond }, nil)
	start := time.Now()
	status, body := post(t, srv, "/query", iqlType, "select Code from Security")
	if status != 504 || time.Since(start) > 3*time.Second {
		t.Fatalf("%d %s after %v", status, body, time.Since(start))
	}
}

// TestAnswerBoundsAndNesting: an answer over max_answer_size,
// endless nesting, a million-digit number (within the size bound, passed
// on as a plain value), gzip bombs: 502/200, never 500, never a hang.
// (It held when written.)
func TestAnswerBoundsAndNesting(t *testing.T) {
	big := `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[["` + strings.Repeat("x", 2<<20) + `"]]}`
	deep := `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[` + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + `]}`
	deepCol := `{"Columns":{"Code":{"Index":0,"Type":"String","X":` + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + `}},"Rows":[]}`
	for _, tt := range []struct {
		name, body string
		want       int
	}{
		{"over max answer", big, 502},
		{"deep rows", deep, 502},
		{"deep column member", deepCol, 502},
		{"a million digits", `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[[1` + strings.Repeat("0", 1_000_000) + `]]}`, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := hostile(t, answerWith(tt.body))
			srv := serviceOver(t, up, func(c *iqengine.Config) { c.MaxAnswerBytes = 1 << 20 * 3 / 2 }, nil)
			start := time.Now()
			status, body := post(t, srv, "/query", iqlType, "select Code from Security")
			if status != tt.want || time.Since(start) > 2*time.Second {
				t.Fatalf("%d %.200s after %v", status, body, time.Since(start))
			}
		})
	}
}

// TestAnswerInformationalFlood: an upstream that answers with endless
// 1xx responses, or with endless header bytes, fails within the time
// limit (the client bounds 1xx responses and header bytes).
// (It held when written.)
func TestAnswerInformationalFlood(t *testing.T) {
	for _, flood := range []string{"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n", "X-Junk: " + strings.Repeat("a", 1000) + "\r\n"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					_, _ = c.Read(make([]byte, 4096))
					if !strings.HasPrefix(flood, "HTTP/") {
						_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
					}
					_ = c.SetWriteDeadline(time.Now().Add(3 * time.Second))
					for {
						if _, err := io.WriteString(c, flood); err != nil {
							return
						}
					}
				}()
			}
		}()
		up := &httptest.Server{URL: "http://" + ln.Addr().String()}
		srv := serviceOver(t, up, func(c *iqengine.Config) { c.Timeout = time.Second }, nil)
		start := time.Now()
		status, body := post(t, srv, "/query", iqlType, "select Code from Security")
		ln.Close()
		if status < 502 || status > 504 || time.Since(start) > 2*time.Second {
			t.Fatalf("%q flood: %d %s after %v", flood[:10], status, body, time.Since(start))
		}
	}
}

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
	srv := serviceOver(t, up, nil, nil)
	status, trailer, body := selectWithTrailer(t, srv, "select Code, LastPrice from Security")
	if status != http.StatusOK || trailer != queryproxy.CodeBadGateway || json.Valid(body) {
		t.Errorf("a large answer whose Columns fails the check: %d, trailer %q, %d bytes", status, trailer, len(body))
	}
	small := hostile(t, answerWith(`{"Rows":[["BHP",1]],"Columns":{"Code":{"Index":1},"LastPrice":{"Index":0}}}`))
	if status, body := post(t, serviceOver(t, small, nil, nil), "/query", iqlType, "select Code, LastPrice from Security"); status != http.StatusBadGateway {
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
	srv := serviceOver(t, up, nil, nil)
	status, body := post(t, srv, "/query", iqlType, "select Code, LastPrice from Security")
	if status != http.StatusServiceUnavailable {
		t.Errorf("connection lost mid-answer: %d %s, docs/configuration/gatehouse_query.md says connection failures are 503", status, body)
	}
}

// TestNumbersVerbatim: a number in an answer is passed on as the upstream
// spelled it, digits and exponent, whatever the column's type (the values
// are the upstream's; only the shape is checked).
func TestNumbersVerbatim(t *testing.T) {
	up := hostile(t, answerWith(`{"Rows":[[1E400,-0],["x",123456789012345678901234567890]],"Columns":{"Code":{"Index":0},"LastPrice":{"Index":1}}}`))
	srv := serviceOver(t, up, nil, nil)
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
		srv := serviceOver(t, up, nil, nil)
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
		srv := serviceOver(t, up, func(c *iqengine.Config) { c.MaxAnswerBytes = tt.max }, nil)
		status, body := post(t, srv, "/query", iqlType, "select Code, LastPrice from Security")
		if status != tt.want {
			t.Errorf("max %d: %d %s", tt.max, status, body)
		}
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
	srv := serviceOver(t, up, func(c *iqengine.Config) { c.Timeout = 20 * time.Second }, nil)
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
