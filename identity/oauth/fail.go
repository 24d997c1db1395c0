package oauth

import (
	"net/http"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Failer is one endpoint's failure path (STYLE rule 19): it logs a failed
// request under the endpoint's name, counts it, and renders the error.
// Nothing of a credential reaches the log: only the error, the grant type
// and the client id, each bounded.
type Failer struct {
	// Endpoint names the endpoint in logs and metrics, e.g. "token".
	Endpoint string
	// Log receives a Debug entry per failure, Error for server faults.
	Log *zap.Logger
	// Count, if set, counts a failure by error code.
	Count func(endpoint, code string)
	// Uniform answers 400 for every client error (see WriteError).
	Uniform bool
	// Unavailable, if set, reports whether the cause of a server_error is
	// a dependency that is down (the store's database) rather than a
	// fault of ours: such an error is answered 503
	// temporarily_unavailable, which tells the client to try again
	// later, and logged at Debug (the dependency logs the outage itself).
	Unavailable func(cause error) bool
}

// Fail logs, counts and renders e. grant and clientID may be empty.
func (f *Failer) Fail(w http.ResponseWriter, r *http.Request, grant, clientID string, e *Error) {
	if e.Code == ErrServerError && f.Unavailable != nil && e.Cause != nil && f.Unavailable(e.Cause) {
		e = TemporarilyUnavailable(e.Cause)
	}
	level := zapcore.DebugLevel
	if e.Code == ErrServerError {
		level = zapcore.ErrorLevel
	}
	if ce := f.Log.Check(level, "request failed"); ce != nil {
		fields := []zap.Field{
			zap.String("endpoint", f.Endpoint),
			zap.String("remote_addr", r.RemoteAddr),
			zap.String("error", e.Code),
			zap.String("description", e.Description),
		}
		if grant != "" {
			fields = append(fields, zap.String("grant_type", Truncate(grant, 64)))
		}
		if clientID != "" {
			fields = append(fields, zap.String("client_id", Truncate(clientID, 128)))
		}
		if e.Cause != nil {
			fields = append(fields, zap.NamedError("cause", e.Cause))
		}
		ce.Write(fields...)
	}
	if f.Count != nil {
		f.Count(f.Endpoint, e.Code)
	}
	WriteError(w, e, f.Uniform)
}
