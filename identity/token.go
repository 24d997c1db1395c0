package identity

import (
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// maxFormBody bounds a token-endpoint request body (DESIGN.md, "Bounds").
const maxFormBody = 64 << 10

// tokenResponse is the success body of the token endpoint (interface.md
// §2.2, RFC 6749 §5.1).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	ExpiresIn    int64  `json:"expires_in"`
	TokenType    string `json:"token_type"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope,omitempty"`
	IDToken      string `json:"id_token,omitempty"`
}

// serveToken is POST /connect/token.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	noStore(w.Header(), s.cfg.HSTS)
	origin := r.Header.Get("Origin")
	if r.Method == http.MethodOptions {
		s.preflight(w, r, "POST")
		return
	}
	if origin != "" && s.anyClientAllowsOrigin(origin) {
		// The client is not known yet: errors before it is answer the
		// origins some client allows; success answers the client's own.
		allowOrigin(w.Header(), origin)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		s.fail(w, r, "", "", &Error{Code: ErrCodeInvalidRequest, Description: "the token endpoint takes POST", Status: http.StatusMethodNotAllowed})
		return
	}
	form, perr := readForm(w, r)
	if perr != nil {
		s.fail(w, r, "", "", perr)
		return
	}
	grant := form.Get("grant_type")
	c, perr := s.authenticateClient(r, form)
	if perr != nil {
		s.fail(w, r, grant, form.Get("client_id"), perr)
		return
	}
	if origin != "" {
		if c.allowsOrigin(origin) {
			allowOrigin(w.Header(), origin)
		} else {
			w.Header().Del("Access-Control-Allow-Origin")
		}
	}
	if grant == "" {
		s.fail(w, r, grant, c.ID, invalidRequest("missing grant_type"))
		return
	}
	var handle func(*http.Request, *client, url.Values) (*tokenResponse, *Error)
	switch grant {
	case GrantPassword:
		handle = s.grantPassword
	case GrantRefreshToken:
		handle = s.grantRefresh
	case GrantClientCredentials:
		handle = s.grantClientCredentials
	default:
		if knownGrant(grant) && !c.allowsGrant(grant) {
			s.fail(w, r, grant, c.ID, oauthErr(ErrCodeUnauthorizedClient, "the client is not allowed this grant type"))
			return
		}
		s.fail(w, r, grant, c.ID, oauthErr(ErrCodeUnsupportedGrantType, "unsupported grant_type"))
		return
	}
	if !c.allowsGrant(grant) {
		s.fail(w, r, grant, c.ID, oauthErr(ErrCodeUnauthorizedClient, "the client is not allowed this grant type"))
		return
	}
	resp, perr := handle(r, c, form)
	if perr != nil {
		s.fail(w, r, grant, c.ID, perr)
		return
	}
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.TokenIssued(grant, c.ID)
	}
	writeJSON(w, http.StatusOK, resp)
}

// fail logs a token-endpoint error (never a credential) and renders it.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, grant, clientID string, e *Error) {
	log := s.log.Debug
	if e.Code == ErrCodeServerError {
		log = s.log.Error
	}
	log("token request failed", fieldsOf(r, grant, clientID, e)...)
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.TokenFailed(e.Code)
	}
	writeError(w, e, s.cfg.UniformErrorStatus)
}

// readForm reads and checks a token-endpoint body: POSTed form, at most
// 64 KiB, no parameter repeated (RFC 6749 §3.2), nothing in the query
// string (credentials never travel in URLs). Empty values count as absent
// (RFC 6749 §3.1).
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, *Error) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/x-www-form-urlencoded" {
		return nil, invalidRequest("the body must be application/x-www-form-urlencoded")
	}
	if r.URL.RawQuery != "" {
		return nil, invalidRequest("parameters must be sent in the request body, not the URL")
	}
	if r.ContentLength > maxFormBody {
		return nil, &Error{Code: ErrCodeInvalidRequest, Description: "the request body is too large", Status: http.StatusRequestEntityTooLarge}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &Error{Code: ErrCodeInvalidRequest, Description: "the request body is too large", Status: http.StatusRequestEntityTooLarge}
		}
		return nil, invalidRequest("malformed form body")
	}
	form := url.Values{}
	for k, vs := range r.PostForm {
		nonEmpty := vs[:0:0]
		for _, v := range vs {
			if v != "" {
				nonEmpty = append(nonEmpty, v)
			}
		}
		if len(nonEmpty) > 1 {
			return nil, invalidRequest("parameter " + safeParamName(k) + " is repeated")
		}
		if len(nonEmpty) == 1 {
			form[k] = nonEmpty
		}
	}
	return form, nil
}

// safeParamName keeps a client-chosen parameter name fit to echo back.
func safeParamName(k string) string {
	if len(k) > 40 || strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r > 0x7e || r == '"' || r == '\\' }) {
		return "(unnamed)"
	}
	return k
}

// noStore sets the headers of every token-endpoint response (interface.md
// §4.2, RFC 6749 §5.1).
func noStore(h http.Header, hsts string) {
	h.Set("Cache-Control", "no-store, no-cache, max-age=0")
	h.Set("Pragma", "no-cache")
	h.Set("Strict-Transport-Security", hsts)
	h.Set("Referrer-Policy", "no-referrer")
}
