package authorize

import (
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/factors"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/web"
)

// Steps a request is sealed for.
const (
	stepLogin   = "login"
	stepConsent = "consent"
)

// Messages of the login form.
const (
	msgBadCredentials = "The username or password is incorrect."
	msgMissing        = "Enter your username and password."
	msgBusy           = "The server is busy. Please try again in a moment."
	msgStale          = "This sign-in form has expired. Please sign in again."
	msgStartAgain     = "This sign-in request has expired or is not valid. Go back to the application and start again."
	msgCrossSite      = "This form was sent from another site, so it was refused."
)

// clientName is how the pages name a client.
func clientName(c *clients.Client) string {
	if c.Name != "" {
		return c.Name
	}
	return c.ID
}

// showLogin renders the login form for q: the request sealed for the login
// step, and an anti-forgery token bound to the browser's pre-login cookie.
func (e *Endpoint) showLogin(w http.ResponseWriter, r *http.Request, name string, q *request, c *clients.Client, status int, username, message string) {
	browser, err := e.cfg.Sessions.Browser(w, r)
	if err != nil {
		e.fail(w, r, name, q, c, oauth.ServerError(err))
		return
	}
	pending, err := e.seal(q, stepLogin)
	if err != nil {
		e.fail(w, r, name, q, c, oauth.ServerError(err))
		return
	}
	if username == "" {
		username = q.LoginHint
	}
	d := web.Login{
		Action: e.cfg.LoginPath, ClientName: clientName(c), CSRFToken: e.cfg.Guard.Token(stepLogin, browser),
		Pending: pending, Username: username, Error: message,
	}
	if e.cfg.Factors != nil && e.cfg.Factors.PasskeysOff() == "" {
		options, state, err := e.cfg.Factors.BeginPasskeyLogin(r.Context(), nil)
		if err != nil {
			e.fail(w, r, name, q, c, oauth.ServerError(err))
			return
		}
		d.Passkey = &web.PasskeyCeremony{Options: options, State: state}
	}
	e.cfg.Pages.Login(w, r, status, d, web.Origin(q.RedirectURI))
}

// passkeyLogin signs a user in with a discoverable passkey (no username):
// the session starts with the passkey's methods, two factors when the
// authenticator verified the user.
func (e *Endpoint) passkeyLogin(w http.ResponseWriter, r *http.Request, q *request, c *clients.Client, state, response string) {
	at := e.cfg.Now()
	if e.cfg.Factors == nil {
		e.showLogin(w, r, LoginName, q, c, http.StatusBadRequest, "", msgStartAgain)
		return
	}
	user, amr, err := e.cfg.Factors.FinishPasskeyLogin(r.Context(), nil, state, []byte(response), e.cfg.ClientIP(r))
	switch {
	case errors.Is(err, users.ErrBadCredentials), errors.Is(err, factors.ErrCeremony), errors.Is(err, factors.ErrPasskeysOff):
		e.log(r, LoginName, c.ID, oauth.ErrAccessDenied, "passkey refused", err)
		e.showLogin(w, r, LoginName, q, c, http.StatusUnauthorized, "", msgBadPasskey)
		return
	case errors.Is(err, users.ErrBusy):
		e.log(r, LoginName, c.ID, oauth.ErrTemporarilyUnavail, "busy", err)
		e.showLogin(w, r, LoginName, q, c, http.StatusServiceUnavailable, "", msgBusy)
		return
	case err != nil:
		e.fail(w, r, LoginName, q, c, oauth.ServerError(err))
		return
	}
	sess, err := e.cfg.Sessions.StartWith(r.Context(), w, r, user.Subject, at, amr)
	switch {
	case errors.Is(err, session.ErrEnded):
		e.log(r, LoginName, c.ID, oauth.ErrAccessDenied, "the user's sessions ended", err)
		e.showLogin(w, r, LoginName, q, c, http.StatusUnauthorized, "", msgBadPasskey)
		return
	case err != nil:
		e.fail(w, r, LoginName, q, c, oauth.ServerError(err))
		return
	}
	e.cfg.Audit.Info("browser login", zap.String("client_id", c.ID), zap.String("sub", user.Subject),
		zap.String("sid", sess.ID), zap.Strings("amr", amr))
	e.proceed(w, r, LoginName, q, c, &login{session: sess, user: user})
}

// ServeLogin is POST /connect/login, the login form. A post from another
// site, or without the browser's anti-forgery token, is refused before
// the password is looked at: nothing is counted, no session starts. A
// password is checked by the password grant's Checker (the same
// brute-force defence); a good one starts a new session, and the request
// goes on to consent or the response.
func (e *Endpoint) ServeLogin(w http.ResponseWriter, r *http.Request) {
	web.PageHeaders(w.Header(), "")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		e.showError(w, r, LoginName, "", &pageError{status: http.StatusMethodNotAllowed, message: msgStartAgain,
			cause: errors.New("method not allowed")})
		return
	}
	if err := e.cfg.Guard.SameOrigin(r); err != nil {
		e.showError(w, r, LoginName, "", &pageError{status: http.StatusForbidden, message: msgCrossSite, cause: err})
		return
	}
	form, perr := oauth.ReadForm(w, r)
	if perr != nil {
		e.showError(w, r, LoginName, "", &pageError{status: max(perr.Status, http.StatusBadRequest), message: msgStartAgain, cause: perr})
		return
	}
	q, c, err := e.open(form.Get("request"), stepLogin)
	if err != nil {
		e.showError(w, r, LoginName, "", &pageError{status: http.StatusBadRequest, message: msgStartAgain, cause: err})
		return
	}
	username := form.Get("username")
	if !e.cfg.Guard.Check(form.Get("csrf_token"), stepLogin, e.cfg.Sessions.BrowserOf(r)) {
		e.log(r, LoginName, c.ID, oauth.ErrInvalidRequest, "anti-forgery token missing or not this browser's", nil)
		e.showLogin(w, r, LoginName, q, c, http.StatusForbidden, username, msgStale)
		return
	}
	if state := form.Get("passkey_state"); state != "" {
		e.passkeyLogin(w, r, q, c, state, form.Get("response"))
		return
	}
	password := form.Get("password")
	if username == "" || password == "" {
		e.showLogin(w, r, LoginName, q, c, http.StatusBadRequest, username, msgMissing)
		return
	}
	at := e.cfg.Now() // before the user is read: a password change meanwhile ends this login (session.ErrEnded)
	user, err := e.cfg.Passwords.Check(r.Context(), username, password, e.cfg.ClientIP(r))
	switch {
	case errors.Is(err, users.ErrBadCredentials):
		e.log(r, LoginName, c.ID, oauth.ErrAccessDenied, "invalid username or password", err)
		e.showLogin(w, r, LoginName, q, c, http.StatusUnauthorized, username, msgBadCredentials)
		return
	case errors.Is(err, users.ErrBusy):
		e.log(r, LoginName, c.ID, oauth.ErrTemporarilyUnavail, "busy", err)
		e.showLogin(w, r, LoginName, q, c, http.StatusServiceUnavailable, username, msgBusy)
		return
	case err != nil:
		e.fail(w, r, LoginName, q, c, oauth.ServerError(err))
		return
	}
	sess, err := e.cfg.Sessions.Start(r.Context(), w, r, user.Subject, at)
	switch {
	case errors.Is(err, session.ErrEnded):
		// The password changed while it was being checked.
		e.log(r, LoginName, c.ID, oauth.ErrAccessDenied, "invalid username or password", err)
		e.showLogin(w, r, LoginName, q, c, http.StatusUnauthorized, username, msgBadCredentials)
		return
	case err != nil:
		e.fail(w, r, LoginName, q, c, oauth.ServerError(err))
		return
	}
	e.cfg.Audit.Info("browser login", zap.String("client_id", c.ID), zap.String("sub", user.Subject),
		zap.String("sid", sess.ID))
	e.proceed(w, r, LoginName, q, c, &login{session: sess, user: user})
}
