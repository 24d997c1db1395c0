package identity

import (
	"net/http"

	"go.uber.org/zap"
)

// fieldsOf describes a failed request for the log: never a token, secret,
// password or form value beyond the grant type and client id.
func fieldsOf(r *http.Request, grant, clientID string, e *Error) []zap.Field {
	fields := []zap.Field{
		zap.String("remote_addr", r.RemoteAddr),
		zap.String("error", e.Code),
		zap.String("description", e.Description),
	}
	if grant != "" {
		fields = append(fields, zap.String("grant_type", truncate(grant, 64)))
	}
	if clientID != "" {
		fields = append(fields, zap.String("client_id", truncate(clientID, 128)))
	}
	if e.Cause != nil {
		fields = append(fields, zap.NamedError("cause", e.Cause))
	}
	return fields
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
