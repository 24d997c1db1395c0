package queryproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

var twoColumns = []sqlgen.Column{{Name: "Code", Type: sqlgen.String}, {Name: "LastPrice", Type: sqlgen.Decimal}}

// priceRows is a result of n rows over twoColumns, ending with err.
func priceRows(n int, err error) *sliceRows {
	r := &sliceRows{cols: twoColumns, err: err}
	for i := range n {
		r.rows = append(r.rows, []any{fmt.Sprintf("C%03d", i), 37.48 + float64(i)})
	}
	return r
}

// wholeResult is the complete JSON of priceRows(n, nil).
func wholeResult(n int) string {
	var b strings.Builder
	b.WriteString(`{"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Index":1,"Type":"Decimal"}},"Rows":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		f, _ := appendFloat(nil, 37.48+float64(i), 64)
		fmt.Fprintf(&b, `["C%03d",%s]`, i, f)
	}
	b.WriteString(`]}`)
	return b.String()
}

func TestWriteResultComplete(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		t.Run(fmt.Sprint(n, " rows"), func(t *testing.T) {
			rec := httptest.NewRecorder()
			sum, err := WriteResult(rec, priceRows(n, nil), ResultOptions{MaxRows: 3})
			if err != nil {
				t.Fatal(err)
			}
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if want := wholeResult(n); string(body) != want {
				t.Errorf("body\n%s\nwant\n%s", body, want)
			}
			if !json.Valid(body) {
				t.Error("body is not valid JSON")
			}
			if got := res.Header.Get("Content-Type"); got != "application/json; charset=utf-8" {
				t.Errorf("Content-Type %q", got)
			}
			if got := res.Header.Get("Content-Length"); got != fmt.Sprint(len(body)) {
				t.Errorf("Content-Length %q, body of %d bytes", got, len(body))
			}
			if res.Header.Get("Trailer") != "" || len(res.Trailer) != 0 {
				t.Errorf("a complete result has trailers: %q %v", res.Header.Get("Trailer"), res.Trailer)
			}
			if sum != (ResultSummary{Rows: n, Bytes: int64(len(body)), Sent: true}) {
				t.Errorf("summary %+v", sum)
			}
		})
	}
}

// TestWriteResultLimitBeforeSending: a result over the limit that fits in the buffer is
// refused with an error, and nothing is written, so the handler can answer with a status.
func TestWriteResultLimitBeforeSending(t *testing.T) {
	rec := httptest.NewRecorder()
	sum, err := WriteResult(rec, priceRows(4, nil), ResultOptions{MaxRows: 3})
	if !errors.Is(err, ErrTooManyRows) {
		t.Fatalf("error %v, want ErrTooManyRows", err)
	}
	if _, ok := errors.AsType[*StreamError](err); ok {
		t.Fatalf("error %v is a StreamError, but nothing should have been sent", err)
	}
	if sum.Sent || rec.Body.Len() != 0 || len(rec.Header()) != 0 || rec.Flushed {
		t.Fatalf("something was written: %+v, header %v, body %q", sum, rec.Header(), rec.Body)
	}
	http.Error(rec, "too many rows", http.StatusUnprocessableEntity)
	if rec.Code != http.StatusUnprocessableEntity {
		t.Fatalf("the handler could not send its status: %d", rec.Code)
	}
}

// TestWriteResultLimitAfterSending: over the limit once rows were sent, the body stops
// without its closing "]}" and the trailer says why.
func TestWriteResultLimitAfterSending(t *testing.T) {
	rec := httptest.NewRecorder()
	sum, err := WriteResult(rec, priceRows(51, nil), ResultOptions{MaxRows: 50, BufferSize: 100})
	if se, ok := errors.AsType[*StreamError](err); !ok || se.Code != CodeResultTooLarge || !errors.Is(err, ErrTooManyRows) {
		t.Fatalf("error %v, want a StreamError with code %s wrapping ErrTooManyRows", err, CodeResultTooLarge)
	}
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	whole := wholeResult(50)
	if want := strings.TrimSuffix(whole, "]}"); string(body) != want {
		t.Errorf("body\n%s\nwant the 50 rows without the closing ]}\n%s", body, want)
	}
	if json.Valid(body) {
		t.Error("a cut result is valid JSON")
	}
	if got := res.Header.Get("Trailer"); got != ErrorTrailer {
		t.Errorf("Trailer header %q, want %q", got, ErrorTrailer)
	}
	if got := res.Trailer.Get(ErrorTrailer); got != CodeResultTooLarge {
		t.Errorf("trailer %s: %q, want %q", ErrorTrailer, got, CodeResultTooLarge)
	}
	if !sum.Sent || sum.Rows != 50 || sum.Bytes != int64(len(body)) {
		t.Errorf("summary %+v", sum)
	}
}

func TestWriteResultEngineError(t *testing.T) {
	engineErr := fmt.Errorf("running query: %w", engine.ErrTimeout)
	tests := []struct {
		name     string
		rows     int
		buffer   int
		wantSent bool
		wantCode string
	}{
		{name: "before sending", rows: 3, buffer: 0},
		{name: "after sending", rows: 40, buffer: 64, wantSent: true, wantCode: CodeTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			sum, err := WriteResult(rec, priceRows(tt.rows, engineErr), ResultOptions{BufferSize: tt.buffer})
			if !errors.Is(err, engine.ErrTimeout) {
				t.Fatalf("error %v, want one wrapping ErrTimeout", err)
			}
			se, got := errors.AsType[*StreamError](err)
			if got != tt.wantSent || sum.Sent != tt.wantSent {
				t.Fatalf("StreamError %v, sent %v, want %v", got, sum.Sent, tt.wantSent)
			}
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if !tt.wantSent {
				if len(body) != 0 {
					t.Fatalf("body %q, want none", body)
				}
				return
			}
			if se.Code != tt.wantCode || res.Trailer.Get(ErrorTrailer) != tt.wantCode {
				t.Errorf("code %q, trailer %q, want %q", se.Code, res.Trailer.Get(ErrorTrailer), tt.wantCode)
			}
			if want := strings.TrimSuffix(wholeResult(tt.rows), "]}"); string(body) != want {
				t.Errorf("body\n%s\nwant\n%s", body, want)
			}
		})
	}
}

// TestWriteResultBadValueMidStream: a row that cannot be encoded is left out whole; the
// rows before it are complete.
func TestWriteResultBadValueMidStream(t *testing.T) {
	rows := priceRows(30, nil)
	rows.rows = append(rows.rows, []any{"BAD", struct{}{}})
	rec := httptest.NewRecorder()
	_, err := WriteResult(rec, rows, ResultOptions{BufferSize: 64})
	if se, ok := errors.AsType[*StreamError](err); !ok || se.Code != CodeInternal {
		t.Fatalf("error %v, want a StreamError with code %s", err, CodeInternal)
	}
	if body := rec.Body.String(); body+"]}" != wholeResult(30) {
		t.Fatalf("body is not the 30 good rows:\n%s", body)
	}
}

func TestWriteResultDuplicateColumns(t *testing.T) {
	rows := &sliceRows{cols: []sqlgen.Column{{Name: "Code", Type: sqlgen.String}, {Name: "Code", Type: sqlgen.String}}}
	rec := httptest.NewRecorder()
	if _, err := WriteResult(rec, rows, ResultOptions{}); err == nil {
		t.Fatal("two columns of one name accepted")
	}
	if rec.Body.Len() != 0 || len(rec.Header()) != 0 {
		t.Fatal("something was written")
	}
}

// failingWriter is a client that went away after the headers.
type failingWriter struct{ httptest.ResponseRecorder }

func (w *failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestWriteResultClientGone(t *testing.T) {
	w := &failingWriter{*httptest.NewRecorder()}
	_, err := WriteResult(w, priceRows(100, nil), ResultOptions{BufferSize: 64})
	if se, ok := errors.AsType[*StreamError](err); !ok || se.Code != CodeCanceled {
		t.Fatalf("error %v, want a StreamError with code %s", err, CodeCanceled)
	}
}

// TestWriteResultOverHTTP checks the trailer and the cut body as a client sees them, over
// HTTP/1.1 (chunked) and HTTP/2.
func TestWriteResultOverHTTP(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 10
		if r.URL.Query().Get("big") != "" {
			n = 1000
		}
		_, err := WriteResult(w, priceRows(n, nil), ResultOptions{MaxRows: n - 1, BufferSize: 1024})
		if _, ok := errors.AsType[*StreamError](err); !ok {
			http.Error(w, `{"Error":{"Code":"result_too_large"}}`, http.StatusUnprocessableEntity)
		}
	})
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprint("http2=", h2), func(t *testing.T) {
			srv := httptest.NewUnstartedServer(handler)
			srv.EnableHTTP2 = h2
			srv.StartTLS()
			defer srv.Close()

			res, err := srv.Client().Get(srv.URL + "/?big=1")
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != http.StatusOK || json.Valid(body) || !strings.HasPrefix(string(body), `{"Columns":`) {
				t.Errorf("status %d, body valid %v, want 200 and a cut body", res.StatusCode, json.Valid(body))
			}
			if got := res.Trailer.Get(ErrorTrailer); got != CodeResultTooLarge {
				t.Errorf("trailer %q (proto %s), want %q", got, res.Proto, CodeResultTooLarge)
			}

			res, err = srv.Client().Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnprocessableEntity {
				t.Errorf("small result over the limit: status %d, want 422", res.StatusCode)
			}
		})
	}
}

// countingWriter is a client that reads as fast as it can. It records the largest write.
type countingWriter struct {
	header   http.Header
	bytes    int64
	maxWrite int
	flushes  int
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(int)     {}
func (w *countingWriter) Flush()              { w.flushes++ }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.bytes += int64(len(p))
	w.maxWrite = max(w.maxWrite, len(p))
	return len(p), nil
}

// TestWriteResultLarge streams 200,000 rows with a constant number of allocations and
// writes of bounded size.
func TestWriteResultLarge(t *testing.T) {
	const n = 200_000
	row := securityRow()
	rowLen := len(must(appendRow(nil, row)))
	headLen := len(appendHead(nil, securityColumns))
	var w *countingWriter
	allocs := testing.AllocsPerRun(1, func() {
		w = &countingWriter{header: http.Header{}}
		rows := &genRows{cols: securityColumns, vals: row, n: n}
		if _, err := WriteResult(w, rows, ResultOptions{MaxRows: n}); err != nil {
			t.Fatal(err)
		}
	})
	if want := int64(headLen + n*rowLen + (n - 1) + 2); w.bytes != want {
		t.Errorf("wrote %d bytes, want %d", w.bytes, want)
	}
	if allocs > 20 {
		t.Errorf("%v allocations for %d rows, want a constant few", allocs, n)
	}
	if limit := DefaultResultBufferSize + rowLen + 1; w.maxWrite > limit {
		t.Errorf("largest write %d bytes, want at most %d", w.maxWrite, limit)
	}
	if w.flushes < int(w.bytes/DefaultResultBufferSize) {
		t.Errorf("%d flushes for %d bytes", w.flushes, w.bytes)
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := WriteResult(&countingWriter{header: http.Header{}}, &genRows{cols: securityColumns, vals: row, n: n}, ResultOptions{}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("allocated %d bytes to stream %d bytes", got, w.bytes)
	}
}

func TestWriteResultFlushRows(t *testing.T) {
	w := &countingWriter{header: http.Header{}}
	if _, err := WriteResult(w, priceRows(10, nil), ResultOptions{FlushRows: 2}); err != nil {
		t.Fatal(err)
	}
	if w.flushes != 6 { // after rows 2, 4, 6, 8, 10, and the closing ]}
		t.Errorf("%d flushes, want 6", w.flushes)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// BenchmarkEncodeRows measures the result writer alone: rows of market data, 1,000 per
// result, into a client that reads as fast as it can.
func BenchmarkEncodeRows(b *testing.B) {
	row := securityRow()
	row[6] = time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)
	w := &countingWriter{header: http.Header{}}
	if _, err := WriteResult(w, &genRows{cols: securityColumns, vals: row, n: 1000}, ResultOptions{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(w.bytes)
	b.ReportAllocs()
	for b.Loop() {
		w := &countingWriter{header: http.Header{}}
		if _, err := WriteResult(w, &genRows{cols: securityColumns, vals: row, n: 1000}, ResultOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
