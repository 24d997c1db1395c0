package device

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/web"
)

// Purposes of the anti-forgery tokens.
const (
	csrfLogin  = "device-login"
	csrfDevice = "device"
)

// Messages of the verification page.
const (
	msgBadCode        = "That code is not valid, or it has expired or been used. Check the code your device shows."
	msgMalformed      = "Enter the code your device shows, such as BCDF-GHJK."
	msgTooMany        = "Too many wrong codes. Wait a while, then try again."
	msgStale          = "This form has expired. Please try again."
	msgCrossSite      = "This form was sent from another site, so it was refused."
	msgBadCredentials = "The username or password is incorrect."
	msgMissing        = "Enter your username and password."
	msgBusy           = "The server is busy. Please try again in a moment."
	msgServer         = "Something went wrong on our side. Please try again."
	msgNoScope        = "Your account may not hold any of the access this device asks for."
	msgDecided        = "This request was already answered, or it has expired."
)

// failure is a refusal on the page: its status, what the user reads, and
// the error code and cause for the log.
type failure struct {
	status  int
	message string
	code    string
	cause   error
}

func (f *failure) log(e *Endpoint, r *http.Request, clientID string) {
	level := zapcore.DebugLevel
	if f.code == oauth.ErrServerError {
		level = zapcore.ErrorLevel
	}
	if ce := e.cfg.Logger.Check(level, "request failed"); ce != nil {
		fields := []zap.Field{zap.String("endpoint", VerificationName), zap.String("remote_addr", r.RemoteAddr),
			zap.String("error", f.code), zap.String("description", f.message)}
		if clientID != "" {
			fields = append(fields, zap.String("client_id", oauth.Truncate(clientID, 128)))
		}
		if f.cause != nil {
			fields = append(fields, zap.NamedError("cause", f.cause))
		}
		ce.Write(fields...)
	}
	if e.cfg.Failed != nil {
		e.cfg.Failed(VerificationName, f.code)
	}
}

func serverFailure(err error) *failure {
	return &failure{status: http.StatusInternalServerError, message: msgServer, code: oauth.ErrServerError, cause: err}
}

// ServeVerification is the verification page (RFC 8628 §3.3), GET and
// POST. Without a session it shows the login form, and returns to the page
// (with the code) once the user is logged in. GET with user_code (the
// verification_uri_complete) looks the code up at once; otherwise the
// user types it. A code found shows the client, the scopes and the
// market data it asked for (marking what the user does not hold) with
// Allow and Deny. Every POST is refused from another site, and without the
// anti-forgery token of the browser (login) or session (code, decision),
// before anything is counted or changed.
func (e *Endpoint) ServeVerification(w http.ResponseWriter, r *http.Request) {
	web.PageHeaders(w.Header(), "")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		e.serveGet(w, r)
	case http.MethodPost:
		e.servePost(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		e.showError(w, r, "", &failure{status: http.StatusMethodNotAllowed, message: msgStale, code: oauth.ErrInvalidRequest,
			cause: errors.New("method not allowed")})
	}
}

func (e *Endpoint) serveGet(w http.ResponseWriter, r *http.Request) {
	typed := r.URL.Query().Get("user_code")
	sess, ok, err := e.cfg.Sessions.Current(r.Context(), r)
	switch {
	case err != nil:
		e.showError(w, r, "", serverFailure(err))
	case !ok:
		code, _ := NormalizeUserCode(typed)
		e.showLogin(w, r, http.StatusOK, FormatUserCode(code), "", "")
	case typed == "" || crossSite(r):
		// A code in a link from another site is shown, not looked up: a
		// page must not spend the user's allowance of wrong codes.
		e.showEnter(w, r, sess, http.StatusOK, typed, "")
	default:
		e.enter(w, r, sess, typed)
	}
}

// crossSite reports whether the browser says the request comes from a
// page of another site (Fetch Metadata). A typed address, a bookmark or a
// scanned QR code sends "none".
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	}
	return false
}

func (e *Endpoint) servePost(w http.ResponseWriter, r *http.Request) {
	if err := e.cfg.Guard.SameOrigin(r); err != nil {
		e.showError(w, r, "", &failure{status: http.StatusForbidden, message: msgCrossSite, code: oauth.ErrInvalidRequest, cause: err})
		return
	}
	form, perr := oauth.ReadForm(w, r)
	if perr != nil {
		e.showError(w, r, "", &failure{status: max(perr.Status, http.StatusBadRequest), message: msgStale, code: perr.Code, cause: perr})
		return
	}
	step := form.Get("step")
	if step == "" {
		e.login(w, r, form)
		return
	}
	ctx := r.Context()
	sess, ok, err := e.cfg.Sessions.Current(ctx, r)
	switch {
	case err != nil:
		e.showError(w, r, "", serverFailure(err))
		return
	case !ok:
		code, _ := NormalizeUserCode(form.Get("user_code"))
		e.showLogin(w, r, http.StatusOK, FormatUserCode(code), "", "")
		return
	case !e.cfg.Guard.Check(form.Get("csrf_token"), csrfDevice, session.Binding(sess)):
		f := &failure{status: http.StatusForbidden, message: msgStale, code: oauth.ErrInvalidRequest,
			cause: errors.New("anti-forgery token missing or not this session's")}
		f.log(e, r, "")
		e.showEnter(w, r, sess, f.status, "", f.message)
		return
	}
	switch step {
	case "code":
		e.enter(w, r, sess, form.Get("user_code"))
	case "decide":
		e.decide(w, r, sess, form.Get("user_code"), form.Get("decision"))
	default:
		e.showError(w, r, "", &failure{status: http.StatusBadRequest, message: msgStale, code: oauth.ErrInvalidRequest,
			cause: errors.New("unknown step")})
	}
}

// enter looks up a typed code and shows what it asks for.
func (e *Endpoint) enter(w http.ResponseWriter, r *http.Request, sess store.Session, typed string) {
	rec, c, f := e.lookup(r.Context(), r, sess, typed)
	if f != nil && f.code == oauth.ErrServerError {
		e.showError(w, r, "", f)
		return
	}
	if f != nil {
		f.log(e, r, "")
		e.showEnter(w, r, sess, f.status, typed, f.message)
		return
	}
	user, err := e.cfg.Users.UserBySubject(r.Context(), sess.Subject)
	if err != nil {
		e.showError(w, r, c.ID, serverFailure(err))
		return
	}
	d := web.Device{
		Step: "confirm", Action: e.cfg.VerificationPath, UserCode: FormatUserCode(mustNormal(typed)),
		ClientName: clientName(c), Username: user.Username, CSRFToken: e.cfg.Guard.Token(csrfDevice, session.Binding(sess)),
	}
	for _, s := range rec.Scopes {
		d.Scopes = append(d.Scopes, web.DescribeScope(s))
	}
	market(&d, rec, user.Entitlements)
	e.cfg.Pages.Device(w, r, http.StatusOK, d)
}

// mustNormal is a code lookup has accepted, normalized.
func mustNormal(typed string) string {
	code, _ := NormalizeUserCode(typed)
	return code
}

// lookup finds the pending, unexpired authorization of a typed code,
// counting the attempt against the limits first; a good code's attempt is
// given back.
func (e *Endpoint) lookup(ctx context.Context, r *http.Request, sess store.Session, typed string) (store.DeviceCode, *clients.Client, *failure) {
	code, ok := NormalizeUserCode(typed)
	if !ok {
		// Cannot be a code: refused without a lookup, so not counted.
		return store.DeviceCode{}, nil, &failure{status: http.StatusBadRequest, message: msgMalformed, code: oauth.ErrInvalidRequest,
			cause: errors.New("malformed user code")}
	}
	tickets, allowed, err := e.admit(ctx, r, sess)
	switch {
	case err != nil:
		return store.DeviceCode{}, nil, serverFailure(err)
	case !allowed:
		return store.DeviceCode{}, nil, &failure{status: http.StatusTooManyRequests, message: msgTooMany, code: oauth.ErrAccessDenied,
			cause: errors.New("user-code entry rate-limited")}
	}
	rec, err := e.cfg.Store.DeviceCodeByUserCode(ctx, e.hashUserCode(code))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.DeviceCode{}, nil, &failure{status: http.StatusBadRequest, message: msgBadCode, code: oauth.ErrInvalidGrant,
			cause: errors.New("unknown user code")}
	case err != nil:
		return store.DeviceCode{}, nil, serverFailure(err)
	case rec.State != store.DevicePending || !e.cfg.Now().Before(rec.ExpiresAt):
		return store.DeviceCode{}, nil, &failure{status: http.StatusBadRequest, message: msgBadCode, code: oauth.ErrInvalidGrant,
			cause: errors.New("user code decided before or expired")}
	}
	c, ok := e.cfg.Clients.Client(rec.ClientID)
	if !ok {
		return store.DeviceCode{}, nil, &failure{status: http.StatusBadRequest, message: msgBadCode, code: oauth.ErrInvalidGrant,
			cause: errors.New("the client is no longer registered")}
	}
	e.refund(ctx, tickets)
	return rec, c, nil
}

// decide records the user's answer.
func (e *Endpoint) decide(w http.ResponseWriter, r *http.Request, sess store.Session, typed, decision string) {
	if decision != "allow" && decision != "deny" {
		e.showError(w, r, "", &failure{status: http.StatusBadRequest, message: msgStale, code: oauth.ErrInvalidRequest,
			cause: errors.New("no decision")})
		return
	}
	ctx := r.Context()
	rec, c, f := e.lookup(ctx, r, sess, typed)
	if f != nil && f.code == oauth.ErrServerError {
		e.showError(w, r, "", f)
		return
	}
	if f != nil {
		f.log(e, r, "")
		e.showEnter(w, r, sess, f.status, typed, f.message)
		return
	}
	user, err := e.cfg.Users.UserBySubject(ctx, sess.Subject)
	switch {
	case err != nil && !errors.Is(err, store.ErrNotFound):
		e.showError(w, r, c.ID, serverFailure(err))
		return
	case err != nil || user.Disabled:
		e.showError(w, r, c.ID, &failure{status: http.StatusForbidden, message: msgStale, code: oauth.ErrAccessDenied,
			cause: errors.New("the user is unknown or disabled")})
		return
	}
	dd := store.DeviceDecision{Approved: decision == "allow", Subject: user.Subject, AuthTime: sess.AuthTime, AMR: sess.AMR,
		SessionID: sess.ID}
	if dd.Approved {
		dd.Scopes = oauth.Intersect(rec.Scopes, user.Scopes)
		if len(dd.Scopes) == 0 {
			e.showError(w, r, c.ID, &failure{status: http.StatusForbidden, message: msgNoScope, code: oauth.ErrInvalidScope,
				cause: errors.New("the user may hold none of the requested scopes")})
			return
		}
	}
	_, err = e.cfg.Store.DecideDeviceCode(ctx, rec.UserCodeHash, e.cfg.Now(), dd)
	switch {
	case errors.Is(err, store.ErrDeviceCodeDecided), errors.Is(err, store.ErrNotFound):
		e.showError(w, r, c.ID, &failure{status: http.StatusConflict, message: msgDecided, code: oauth.ErrInvalidGrant, cause: err})
		return
	case err != nil:
		e.showError(w, r, c.ID, serverFailure(err))
		return
	}
	outcome := "denied"
	if dd.Approved {
		outcome = "approved"
	}
	e.cfg.Audit.Info("device authorization "+outcome, zap.String("client_id", c.ID), zap.String("sub", user.Subject),
		zap.String("sid", sess.ID), zap.Strings("scopes", dd.Scopes))
	done := web.Device{Step: "done", ClientName: clientName(c), Approved: dd.Approved}
	if dd.Approved {
		market(&done, rec, user.Entitlements)
	}
	e.cfg.Pages.Device(w, r, http.StatusOK, done)
}

// login is the login form posted to the page: checked as the authorization
// endpoint's (same origin, the browser's anti-forgery token, the password
// checker's brute-force defence); a good password starts a session and
// returns to the page with the code.
func (e *Endpoint) login(w http.ResponseWriter, r *http.Request, form url.Values) {
	code, _ := NormalizeUserCode(form.Get("request"))
	pending := FormatUserCode(code)
	username := form.Get("username")
	if !e.cfg.Guard.Check(form.Get("csrf_token"), csrfLogin, e.cfg.Sessions.BrowserOf(r)) {
		(&failure{status: http.StatusForbidden, message: msgStale, code: oauth.ErrInvalidRequest,
			cause: errors.New("anti-forgery token missing or not this browser's")}).log(e, r, "")
		e.showLogin(w, r, http.StatusForbidden, pending, username, msgStale)
		return
	}
	password := form.Get("password")
	if username == "" || password == "" {
		e.showLogin(w, r, http.StatusBadRequest, pending, username, msgMissing)
		return
	}
	at := e.cfg.Now() // before the user is read: a password change meanwhile ends this login (session.ErrEnded)
	user, err := e.cfg.Passwords.Check(r.Context(), username, password, e.cfg.ClientIP(r))
	switch {
	case errors.Is(err, users.ErrBadCredentials):
		(&failure{status: http.StatusUnauthorized, message: msgBadCredentials, code: oauth.ErrAccessDenied, cause: err}).log(e, r, "")
		e.showLogin(w, r, http.StatusUnauthorized, pending, username, msgBadCredentials)
		return
	case errors.Is(err, users.ErrBusy):
		e.showLogin(w, r, http.StatusServiceUnavailable, pending, username, msgBusy)
		return
	case err != nil:
		e.showError(w, r, "", serverFailure(err))
		return
	}
	sess, err := e.cfg.Sessions.Start(r.Context(), w, r, user.Subject, at)
	switch {
	case errors.Is(err, session.ErrEnded):
		// The password changed while it was being checked.
		(&failure{status: http.StatusUnauthorized, message: msgBadCredentials, code: oauth.ErrAccessDenied, cause: err}).log(e, r, "")
		e.showLogin(w, r, http.StatusUnauthorized, pending, username, msgBadCredentials)
		return
	case err != nil:
		e.showError(w, r, "", serverFailure(err))
		return
	}
	e.cfg.Audit.Info("browser login", zap.String("endpoint", VerificationName), zap.String("sub", user.Subject), zap.String("sid", sess.ID))
	target := e.cfg.VerificationPath
	if code != "" {
		target += "?user_code=" + url.QueryEscape(pending)
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

func (e *Endpoint) showLogin(w http.ResponseWriter, r *http.Request, status int, pending, username, message string) {
	browser, err := e.cfg.Sessions.Browser(w, r)
	if err != nil {
		e.showError(w, r, "", serverFailure(err))
		return
	}
	e.cfg.Pages.Login(w, r, status, web.Login{
		Action: e.cfg.VerificationPath, CSRFToken: e.cfg.Guard.Token(csrfLogin, browser), Pending: pending,
		Username: username, Error: message,
	})
}

func (e *Endpoint) showEnter(w http.ResponseWriter, r *http.Request, sess store.Session, status int, typed, message string) {
	e.cfg.Pages.Device(w, r, status, web.Device{
		Step: "enter", Action: e.cfg.VerificationPath, UserCode: oauth.Truncate(trimmed(typed), 32),
		CSRFToken: e.cfg.Guard.Token(csrfDevice, session.Binding(sess)), Error: message,
	})
}

func (e *Endpoint) showError(w http.ResponseWriter, r *http.Request, clientID string, f *failure) {
	f.log(e, r, clientID)
	e.cfg.Pages.Error(w, r, f.status, web.Error{Heading: "Device not connected", Message: f.message})
}
