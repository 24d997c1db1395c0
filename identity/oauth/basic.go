package oauth

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
)

// BasicCredentials reads client_secret_basic credentials. RFC 6749
// §2.3.1: id and secret are form-urlencoded before Base64. ok is false
// when the request has no Authorization header.
func BasicCredentials(r *http.Request) (id, secret string, ok bool, err *Error) {
	h := r.Header.Values("Authorization")
	if len(h) == 0 {
		return "", "", false, nil
	}
	if len(h) > 1 {
		return "", "", false, InvalidRequest("more than one Authorization header")
	}
	malformed := &Error{Code: ErrInvalidClient, Description: "malformed Basic credentials", Basic: true}
	scheme, cred, found := strings.Cut(h[0], " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false, &Error{Code: ErrInvalidClient, Description: "unsupported client authentication scheme", Basic: true}
	}
	raw, decErr := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if decErr != nil {
		return "", "", false, malformed
	}
	rawID, rawSecret, found := strings.Cut(string(raw), ":")
	if !found {
		return "", "", false, malformed
	}
	id, e1 := url.QueryUnescape(rawID)
	secret, e2 := url.QueryUnescape(rawSecret)
	if e1 != nil || e2 != nil || id == "" {
		return "", "", false, malformed
	}
	return id, secret, true, nil
}
