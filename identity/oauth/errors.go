package oauth

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Error codes (RFC 6749 §5.2, RFC 7009 §2.2.1, RFC 8628 §3.5).
const (
	ErrInvalidRequest       = "invalid_request"
	ErrInvalidClient        = "invalid_client"
	ErrInvalidGrant         = "invalid_grant"
	ErrUnauthorizedClient   = "unauthorized_client"
	ErrUnsupportedGrantType = "unsupported_grant_type"
	ErrInvalidScope         = "invalid_scope"
	ErrServerError          = "server_error"
	ErrTemporarilyUnavail   = "temporarily_unavailable"
	ErrAuthorizationPending = "authorization_pending"
	ErrSlowDown             = "slow_down"
	ErrAccessDenied         = "access_denied"
	ErrExpiredToken         = "expired_token"
	// RFC 6750 §3.1, of the endpoints that take a bearer token.
	ErrInvalidToken      = "invalid_token"
	ErrInsufficientScope = "insufficient_scope"
	// The authorization endpoint (RFC 6749 §4.1.2.1, OpenID Connect Core
	// §3.1.2.6).
	ErrUnsupportedResponseType = "unsupported_response_type"
	ErrLoginRequired           = "login_required"
	ErrConsentRequired         = "consent_required"
	ErrInteractionRequired     = "interaction_required"
	ErrInvalidRequestObject    = "invalid_request_object"
	ErrRequestURINotSupported  = "request_uri_not_supported"
	ErrRegistrationNotSupp     = "registration_not_supported"
	// RFC 9396 §5: authorization_details malformed, of a type not
	// supported, or asking for more than the grant holds.
	ErrInvalidAuthorizationDetails = "invalid_authorization_details"
)

// ErrorCodes are every code an endpoint may answer, for bounded metric
// labels.
var ErrorCodes = []string{
	ErrInvalidRequest, ErrInvalidClient, ErrInvalidGrant, ErrUnauthorizedClient,
	ErrUnsupportedGrantType, ErrInvalidScope, ErrServerError, ErrTemporarilyUnavail,
	ErrAuthorizationPending, ErrSlowDown, ErrAccessDenied, ErrExpiredToken,
	ErrInvalidToken, ErrInsufficientScope,
	ErrUnsupportedResponseType, ErrLoginRequired, ErrConsentRequired, ErrInteractionRequired,
	ErrInvalidRequestObject, ErrRequestURINotSupported, ErrRegistrationNotSupp,
	ErrInvalidAuthorizationDetails,
}

// Error is an OAuth error as a value: what the client reads (Code,
// Description, Status) kept apart from what is logged (Cause).
//
// Functions return *Error, not error, so that a caller cannot forget the
// status; assign one to an error variable only when it is non-nil (a nil
// *Error in an error interface is not a nil error).
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

// NewError returns an error with code and description and status 400.
func NewError(code, description string) *Error {
	return &Error{Code: code, Description: description}
}

// InvalidRequest is an invalid_request error.
func InvalidRequest(description string) *Error {
	return NewError(ErrInvalidRequest, description)
}

// MethodNotAllowed is the answer to a method an endpoint does not take.
func MethodNotAllowed(description string) *Error {
	return &Error{Code: ErrInvalidRequest, Description: description, Status: http.StatusMethodNotAllowed}
}

// ServerError is our own fault: the client reads a fixed text, the log
// gets cause.
func ServerError(cause error) *Error {
	return &Error{Code: ErrServerError, Description: "the server could not complete the request", Status: http.StatusInternalServerError, Cause: cause}
}

// TemporarilyUnavailable is the answer while a dependency is down (RFC
// 6749 §4.1.2.1's temporarily_unavailable, with HTTP 503): the client may
// try the same request again later; the log gets cause.
func TemporarilyUnavailable(cause error) *Error {
	return &Error{Code: ErrTemporarilyUnavail, Description: "the server cannot complete the request now, try again later",
		Status: http.StatusServiceUnavailable, Cause: cause}
}

// ErrorBody is the JSON body of an error (RFC 6749 §5.2).
type ErrorBody struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description,omitempty"`
}

// WriteError renders e as an RFC 6749 §5.2 body. uniform makes every
// status 400 (IdentityServer's behaviour) except server faults, 405 and
// 413.
func WriteError(w http.ResponseWriter, e *Error, uniform bool) {
	status := e.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	if e.Code == ErrInvalidClient {
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
	WriteJSON(w, status, ErrorBody{Error: e.Code, ErrorDescription: DescriptionSafe(e.Description)})
}

// DescriptionSafe keeps the characters RFC 6749 §5.2 allows in an
// error_description (%x20-21 / %x23-5B / %x5D-7E), dropping any other, so
// that no description, whatever it echoes, breaks the rule.
func DescriptionSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if !DescriptionChar(r) {
			return -1
		}
		return r
	}, s)
}

// DescriptionChar reports whether RFC 6749 §5.2 allows r in an
// error_description.
func DescriptionChar(r rune) bool {
	return r >= 0x20 && r <= 0x7e && r != '"' && r != '\\'
}

// WriteJSON writes v as a JSON body with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":"server_error"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
