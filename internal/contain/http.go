package contain

import (
	"net/http"

	"go.uber.org/zap"
)

// Serve runs h for w and r; a panic in h is reported (as Recover does),
// and fail then answers the request: started is false when h had written
// nothing (no header, no body), so fail can still write an error status
// in the protocol's form; true when the response had begun, so fail can
// only end it (a trailer). A panic in fail is reported too.
func Serve(log *zap.Logger, component string, w http.ResponseWriter, r *http.Request, h http.Handler,
	fail func(w http.ResponseWriter, started bool)) {
	tw := &trackingWriter{ResponseWriter: w}
	defer Recover(log, component, func() { fail(w, tw.started) })
	h.ServeHTTP(tw, r)
}

// trackingWriter notes whether a response has begun.
type trackingWriter struct {
	http.ResponseWriter
	started bool
}

func (t *trackingWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		t.started = true
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.started = true
	return t.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer underneath (Flush,
// deadlines).
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
