package identity

import (
	"encoding/json"
	"net/http"
)

// OAuth 2.0 error codes (RFC 6749 §5.2, RFC 7009, RFC 8628).
const (
	ErrCodeInvalidRequest       = "invalid_request"
	ErrCodeInvalidClient        = "invalid_client"
	ErrCodeInvalidGrant         = "invalid_grant"
	ErrCodeUnauthorizedClient   = "unauthorized_client"
	ErrCodeUnsupportedGrantType = "unsupported_grant_type"
	ErrCodeInvalidScope         = "invalid_scope"
	ErrCodeServerError          = "server_error"
	ErrCodeTemporarilyUnavail   = "temporarily_unavailable"
)

// Error is an OAuth error as a value: what the client reads (Code,
// Description, Status) kept apart from what is logged (Cause).
type Error struct {
	Code        string // RFC 6749 error code
	Description string // human-readable, safe to show the client
	Status      int    // HTTP status; 0 means 400
	// Basic marks a failed client authentication through the Authorization
	// header: RFC 6749 §5.2 wants 401 with WWW-Authenticate then.
	Basic bool
	// Cause is the internal reason, for the log only.
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Code + ": " + e.Description + ": " + e.Cause.Error()
	}
	return e.Code + ": " + e.Description
}

func (e *Error) Unwrap() error { return e.Cause }

func oauthErr(code, description string) *Error {
	return &Error{Code: code, Description: description}
}

func invalidRequest(description string) *Error {
	return oauthErr(ErrCodeInvalidRequest, description)
}

func serverError(cause error) *Error {
	return &Error{Code: ErrCodeServerError, Description: "the server could not complete the request", Status: http.StatusInternalServerError, Cause: cause}
}

type errorBody struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description,omitempty"`
}

// writeError renders e as an RFC 6749 §5.2 body. uniform makes every
// status 400 (IdentityServer's behaviour) except server faults.
func writeError(w http.ResponseWriter, e *Error, uniform bool) {
	status := e.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	if e.Code == ErrCodeInvalidClient {
		switch {
		case uniform:
			status = http.StatusBadRequest
		case e.Basic:
			status = http.StatusUnauthorized
			w.Header().Set("WWW-Authenticate", `Basic realm="gatehouse", charset="UTF-8"`)
		}
	}
	if uniform && status < 500 && status != http.StatusMethodNotAllowed && status != http.StatusRequestEntityTooLarge {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, errorBody{Error: e.Code, ErrorDescription: e.Description})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":"server_error"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
