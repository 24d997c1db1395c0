package authorize

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/web"
)

// responseParams are the parameters of a successful response.
func responseParams(fc *tokens.FrontChannel) url.Values {
	v := url.Values{}
	if fc.Code != "" {
		v.Set("code", fc.Code)
	}
	if fc.AccessToken != "" {
		v.Set("access_token", fc.AccessToken)
		v.Set("token_type", fc.TokenType)
		v.Set("expires_in", strconv.FormatInt(fc.ExpiresIn, 10))
		v.Set("scope", fc.Scope)
	}
	if fc.IDToken != "" {
		v.Set("id_token", fc.IDToken)
	}
	return v
}

// send sends the response v back to the client, with state and iss (RFC
// 9207), in the request's response mode: a redirect with v in the query or
// the fragment, or a form posted by the browser (form_post).
func (e *Endpoint) send(w http.ResponseWriter, r *http.Request, q *request, v url.Values) {
	if q.State != "" {
		v.Set("state", q.State)
	}
	v.Set("iss", e.cfg.Issuer)
	switch q.ResponseMode {
	case modeFormPost:
		e.cfg.Pages.FormPost(w, r, q.RedirectURI, v)
		return
	case modeFragment:
		w.Header().Set("Location", q.RedirectURI+"#"+v.Encode())
	default:
		sep := "?"
		if strings.Contains(q.RedirectURI, "?") {
			sep = "&"
		}
		w.Header().Set("Location", q.RedirectURI+sep+v.Encode())
	}
	status := http.StatusFound
	if r.Method == http.MethodPost {
		status = http.StatusSeeOther // the browser follows with a GET
	}
	w.WriteHeader(status)
}

// fail logs and counts an error of a request whose redirect URI is good,
// and sends it back to the client (RFC 6749 §4.1.2.1, §4.2.2.1).
func (e *Endpoint) fail(w http.ResponseWriter, r *http.Request, name string, q *request, c *clients.Client, perr *oauth.Error) {
	clientID := ""
	if c != nil {
		clientID = c.ID
	}
	e.log(r, name, clientID, perr.Code, perr.Description, perr.Cause)
	if q == nil || q.RedirectURI == "" {
		e.showError(w, r, name, clientID, &pageError{status: http.StatusBadRequest, message: "The sign-in request failed."})
		return
	}
	v := url.Values{"error": {perr.Code}}
	if d := oauth.DescriptionSafe(perr.Description); d != "" && perr.Code != oauth.ErrServerError {
		v.Set("error_description", d)
	}
	e.send(w, r, q, v)
}

// showError logs and counts an error that is shown, never redirected.
func (e *Endpoint) showError(w http.ResponseWriter, r *http.Request, name, clientID string, pe *pageError) {
	code := oauth.ErrInvalidRequest
	if pe.status >= 500 {
		code = oauth.ErrServerError
	}
	e.log(r, name, clientID, code, pe.message, pe.cause)
	e.cfg.Pages.Error(w, r, pe.status, web.Error{Heading: "Sign-in failed", Message: pe.message})
}

// log writes the one failure entry of a request and counts it (STYLE rule
// 19: the endpoint named is the one that failed).
func (e *Endpoint) log(r *http.Request, name, clientID, code, description string, cause error) {
	level := zapcore.DebugLevel
	if code == oauth.ErrServerError {
		level = zapcore.ErrorLevel
	}
	if ce := e.cfg.Logger.Check(level, "request failed"); ce != nil {
		fields := []zap.Field{
			zap.String("endpoint", name), zap.String("remote_addr", r.RemoteAddr),
			zap.String("error", code), zap.String("description", description),
		}
		if clientID != "" {
			fields = append(fields, zap.String("client_id", oauth.Truncate(clientID, 128)))
		}
		if cause != nil {
			fields = append(fields, zap.NamedError("cause", cause))
		}
		ce.Write(fields...)
	}
	if e.cfg.Failed != nil {
		e.cfg.Failed(name, code)
	}
}
