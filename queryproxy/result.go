package queryproxy

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// The shape of a result (docs/design.md, "Query result"):
//
//	{"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Index":1,"Type":"Decimal"}},
//	 "Rows":[["BHP",37.48],["CBA",118.2]]}
//
// Columns comes first, so a client knows the columns before the first row; a row is an
// array in select-list order, Index giving each column's place in it.
//
// No silent truncation. A result may hold at most MaxRows rows; the caller asks the engine
// for MaxRows+1 (e.g. LIMIT MaxRows+1) so that one row more than allowed shows the limit
// was exceeded. WriteResult holds the start of the result in a buffer (ResultOptions.
// BufferSize, default 32 KiB) and sends nothing before the buffer fills, so a failure is
// reported in one of two ways, depending on when it happens:
//
//   - Before anything was sent (the result so far fits in the buffer, which is the case for
//     any result of at most BufferSize bytes): WriteResult returns the error, having
//     written nothing, not even headers. The error wraps ErrTooManyRows, or the engine's
//     error (engine.ErrTimeout, ...). The handler answers with an error status and body as for
//     any other failure.
//   - After the first bytes were sent (status 200 and part of the rows are on the wire):
//     WriteResult sends the complete rows it holds, stops, leaves out the closing "]}" (so
//     the body is not valid JSON and no parser takes it for a whole result), sets the
//     HTTP trailer ErrorTrailer to the failure's code (CodeResultTooLarge, CodeTimeout,
//     ...), and returns a *StreamError. The handler must write nothing more and only log.
//
// WriteResult declares the trailer (the "Trailer: Gatehouse-Error" header) itself, just
// before it sends the first bytes; a handler that adds headers of its own sets them before
// calling WriteResult. A result sent complete in one piece carries a Content-Length and no
// trailer.

// ErrorTrailer is the HTTP trailer that carries the code of a failure that happened after
// the first bytes of a result were sent. Its presence means the body is incomplete.
const ErrorTrailer = "Gatehouse-Error"

// The codes WriteResult puts in ErrorTrailer. A handler's error bodies use the same codes
// for the same failures when they happen before anything was sent.
const (
	CodeResultTooLarge = "result_too_large" // more rows than MaxRows
	CodeTimeout        = "timeout"          // engine.ErrTimeout
	CodeCanceled       = "canceled"         // engine.ErrCanceled, or the client stopped reading
	CodeUnavailable    = "unavailable"      // engine.ErrUnavailable
	CodeInternal       = "internal_error"   // anything else
)

// ErrTooManyRows is wrapped by the error of a result with more rows than MaxRows.
var ErrTooManyRows = errors.New("query result has more rows than allowed")

// StreamError is the error of a result that failed after its first bytes were sent: the
// response body stops short (without its closing "]}") and the trailer ErrorTrailer
// carries Code. Err is the cause, for the log.
type StreamError struct {
	Code string
	Err  error
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("query result cut short (%s): %v", e.Code, e.Err)
}

func (e *StreamError) Unwrap() error { return e.Err }

// Defaults of ResultOptions.
const (
	DefaultResultBufferSize = 32 << 10
)

// ResultOptions tune WriteResult.
type ResultOptions struct {
	// MaxRows is the most rows a result may hold; the caller asks the engine for one row
	// more. 0 means no limit.
	MaxRows int

	// BufferSize is how many bytes of the result are held before they are written and
	// flushed to the client, and so the largest result whose failure can still be
	// answered with an error status. Default DefaultResultBufferSize (32 KiB). A row is
	// never split: the buffer grows to hold a row larger than BufferSize.
	BufferSize int

	// FlushRows, if positive, also sends the buffer after every FlushRows rows, for
	// clients that want rows as they come. Default 0: only full buffers are sent. A
	// small FlushRows makes failures after the first flush (trailer, not status) likelier.
	FlushRows int

	// WriteTimeout bounds each write of the result to the client: a client that does
	// not take a part of its result within it ends the result (the trailer says
	// canceled), so an unread result holds the engine's connection no longer than
	// this, whatever the statement's time limit (a read blocked on the client reads
	// no rows, so no row check can end it). Default DefaultResultWriteTimeout.
	WriteTimeout time.Duration
}

// DefaultResultWriteTimeout bounds each write of a result to the client.
const DefaultResultWriteTimeout = 10 * time.Second

// ResultSummary says what WriteResult did, for the log and metrics.
type ResultSummary struct {
	Rows  int   // rows written
	Bytes int64 // body bytes written
	Sent  bool  // whether anything (headers included) was written to the client
}

// bufPool holds the buffers of results, each of DefaultResultBufferSize or more.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, DefaultResultBufferSize+4<<10)
	return &b
}}

// maxPooledBuffer is the largest buffer put back in bufPool; one grown by a huge row is
// left to the garbage collector.
const maxPooledBuffer = 1 << 20

// WriteResult streams rows to w as a JSON result, with at most about
// ResultOptions.BufferSize bytes held at a time. It does not close rows. On success the
// response is complete. On failure, see the comment at the top of this file: a
// *StreamError means the response was started and is now cut short; any other error means
// nothing was written.
func WriteResult(w http.ResponseWriter, rows engine.Rows, opts ResultOptions) (ResultSummary, error) {
	s, err := writeResult(w, rows, opts)
	return s.sum, err
}

func writeResult(w http.ResponseWriter, rows engine.Rows, opts ResultOptions) (*resultStream, error) {
	if opts.BufferSize <= 0 {
		opts.BufferSize = DefaultResultBufferSize
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultResultWriteTimeout
	}
	bp := bufPool.Get().(*[]byte)
	s := &resultStream{w: w, buf: (*bp)[:0], wt: opts.WriteTimeout}
	defer s.clearDeadline()
	defer func() {
		if cap(s.buf) <= maxPooledBuffer {
			*bp = s.buf[:0]
			bufPool.Put(bp)
		}
	}()

	cols := rows.Columns()
	if err := checkColumns(cols); err != nil {
		return s, err
	}
	s.buf = appendHead(s.buf, cols)
	for rows.Next() {
		if opts.MaxRows > 0 && s.sum.Rows == opts.MaxRows {
			return s, s.fail(fmt.Errorf("%w: more than %d rows", ErrTooManyRows, opts.MaxRows))
		}
		if s.sum.Sent {
			contain.Point("query.stream")
		}
		mark := len(s.buf)
		if s.sum.Rows > 0 {
			s.buf = append(s.buf, ',')
		}
		var err error
		if s.buf, err = appendRow(s.buf, rows.Values()); err != nil {
			s.buf = s.buf[:mark]
			return s, s.fail(fmt.Errorf("encoding row %d: %w", s.sum.Rows+1, err))
		}
		s.sum.Rows++
		if len(s.buf) >= opts.BufferSize || opts.FlushRows > 0 && s.sum.Rows%opts.FlushRows == 0 {
			if err := s.send(); err != nil {
				return s, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return s, s.fail(err)
	}
	s.buf = append(s.buf, "]}"...)
	if !s.sum.Sent {
		// The whole result is here: send it with its length, and no trailer,
		// unflushed (the server sends it with the headers when the handler
		// returns: one write).
		w.Header().Set("Content-Length", strconv.Itoa(len(s.buf)))
		s.last = true
	}
	return s, s.send()
}

// resultStream is the state of one WriteResult.
type resultStream struct {
	w    http.ResponseWriter
	rc   *http.ResponseController // made at the first flush
	wt   time.Duration            // each write's time limit
	dl   bool                     // a write deadline is set: lifted after the write
	noDl bool                     // the writer has no deadlines
	buf  []byte
	sum  ResultSummary
	// last: the buffer is the whole response, written without a flush.
	last bool
}

// send writes the buffer to the client and flushes it (unless it is the whole response,
// s.last), starting the response (status
// 200, Content-Type, the trailer declared) if it has not started yet. A write error is a
// *StreamError: the client stopped reading.
func (s *resultStream) send() error {
	if !s.sum.Sent {
		h := s.w.Header()
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "application/json; charset=utf-8")
		}
		if h.Get("Content-Length") == "" && !declared(h, ErrorTrailer) {
			h.Add("Trailer", ErrorTrailer)
		}
		s.sum.Sent = true
	}
	if !s.last {
		if s.rc == nil {
			s.rc = http.NewResponseController(s.w)
		}
		// The deadline bounds this write and its flush only, and is lifted after
		// them: on HTTP/2 a deadline that passes resets the stream even while no
		// write is under way (rows may take their time to come from the engine).
		if !s.noDl {
			switch err := s.rc.SetWriteDeadline(time.Now().Add(s.wt)); {
			case err == nil:
				s.dl = true
			case errors.Is(err, http.ErrNotSupported):
				s.noDl = true
			}
		}
	}
	n, err := s.w.Write(s.buf)
	s.sum.Bytes += int64(n)
	s.buf = s.buf[:0]
	if err == nil && !s.last {
		if s.rc == nil {
			s.rc = http.NewResponseController(s.w)
		}
		err = s.rc.Flush()
		if errors.Is(err, http.ErrNotSupported) {
			err = nil
		}
	}
	s.clearDeadline()
	if err != nil {
		return &StreamError{Code: CodeCanceled, Err: fmt.Errorf("writing query result: %w", err)}
	}
	return nil
}

// clearDeadline lifts the write deadline send set, so that it does not bound the next
// response on the same connection.
func (s *resultStream) clearDeadline() {
	if s.dl {
		_ = s.rc.SetWriteDeadline(time.Time{})
		s.dl = false
	}
}

// fail ends the result with err. If nothing was sent, it discards the buffer and returns
// err. Otherwise it sends the complete rows it holds, without the closing "]}", sets the
// trailer, and returns a *StreamError.
func (s *resultStream) fail(err error) error {
	if !s.sum.Sent {
		s.buf = s.buf[:0]
		return err
	}
	code := trailerCode(err)
	if sendErr := s.send(); sendErr != nil {
		return &StreamError{Code: code, Err: errors.Join(err, sendErr)}
	}
	// The prefixed form is sent as a trailer even if the header could not be declared
	// (because the handler had already written the headers).
	s.w.Header().Set(http.TrailerPrefix+ErrorTrailer, code)
	return &StreamError{Code: code, Err: err}
}

// trailerCode is the code of err for ErrorTrailer.
func trailerCode(err error) string {
	switch {
	case errors.Is(err, ErrTooManyRows):
		return CodeResultTooLarge
	case errors.Is(err, engine.ErrTimeout):
		return CodeTimeout
	case errors.Is(err, engine.ErrCanceled):
		return CodeCanceled
	case errors.Is(err, engine.ErrUnavailable):
		return CodeUnavailable
	case errors.Is(err, engine.ErrBadGateway):
		return CodeBadGateway
	}
	return CodeInternal
}

// declared reports whether the header h declares the trailer name.
func declared(h http.Header, name string) bool {
	for _, v := range h.Values("Trailer") {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), name) {
				return true
			}
		}
	}
	return false
}

// checkColumns refuses a result with no columns, or with two columns of one name: Columns
// is a JSON object, whose member names must be unique.
func checkColumns(cols []sqlgen.Column) error {
	if len(cols) == 0 {
		return errors.New("query result has no columns")
	}
	for i, c := range cols {
		for _, d := range cols[:i] {
			if c.Name == d.Name {
				return fmt.Errorf("query result has two columns named %q", c.Name)
			}
		}
	}
	return nil
}
