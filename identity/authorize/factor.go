package authorize

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/factors"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/web"
)

// FactorName is the second-factor form's name in logs and metrics.
const FactorName = "second_factor"

// stepFactor is the step a request is sealed for on the second-factor
// form.
const stepFactor = "factor"

// Messages of the second-factor form.
const (
	msgBadCode     = "That code is not right, or it was used already. Enter the current code."
	msgMissingCode = "Enter the code from your authenticator app, or a recovery code."
	msgBadPasskey  = "That passkey was not accepted. Try again, or use another way."
)

// needsStepUp reports whether the request asks for more than the session
// has passed: a scope the user holds that needs a second factor, or the
// multi-factor class in acr_values (RFC 9470), while the session passed
// one factor, and the user has a second one to pass. A user with none
// gets the other scopes (grantedScopes).
func (e *Endpoint) needsStepUp(r *http.Request, q *request, sess store.Session, user store.User) (bool, error) {
	if e.cfg.Factors == nil || oauth.MultiFactor(sess.AMR) {
		return false, nil
	}
	held := oauth.Intersect(q.Scopes, user.Scopes)
	if len(e.cfg.Tokens.NeedsSecondFactor(held)) == 0 && !q.SecondFactor {
		return false, nil
	}
	st, err := e.cfg.Factors.Status(r.Context(), user.Subject)
	return st.Any(), err
}

// showFactor renders the second-factor form: the request sealed for the
// factor step with the session it is for, and an anti-forgery token bound
// to that session.
func (e *Endpoint) showFactor(w http.ResponseWriter, r *http.Request, name string, q *request, c *clients.Client,
	sess store.Session, user store.User, status int, message string) {
	pq := *q
	pq.Subject, pq.SessionID = user.Subject, sess.ID
	pending, err := e.seal(&pq, stepFactor)
	if err != nil {
		e.fail(w, r, name, q, c, oauth.ServerError(err))
		return
	}
	st, err := e.cfg.Factors.Status(r.Context(), user.Subject)
	if err != nil {
		e.fail(w, r, name, q, c, oauth.ServerError(err))
		return
	}
	d := web.Factor{
		Action: e.cfg.FactorPath, ClientName: clientName(c), Username: user.Username,
		CSRFToken: e.cfg.Guard.Token(stepFactor, session.Binding(sess)), Pending: pending, Error: message,
	}
	if st.Passkeys > 0 && e.cfg.Factors.PasskeysOff() == "" {
		options, state, err := e.cfg.Factors.BeginPasskeyLogin(r.Context(), &user)
		if err != nil {
			e.fail(w, r, name, q, c, oauth.ServerError(err))
			return
		}
		d.Passkey = &web.PasskeyCeremony{Options: options, State: state}
	}
	d.TOTP = st.TOTP || st.RecoveryCodes > 0 || d.Passkey == nil
	e.cfg.Pages.Factor(w, r, status, d, web.Origin(q.RedirectURI))
}

// withMethods is amr after the methods of another sign-in were passed on
// top of it.
func withMethods(amr, more []string) []string {
	for _, m := range more {
		amr = oauth.WithFactor(amr, m)
	}
	return amr
}

// ServeFactor is POST /connect/login/factor, the second-factor form: a
// code of the user's authenticator app (TOTP), a recovery code, or one
// of the user's passkeys. Like
// the consent form it refuses posts from another site, without the
// session's anti-forgery token, or from another session than the one it
// was shown for, changing nothing. Codes are checked under the password
// checks' brute-force defence; a right one elevates the session (a new
// cookie, amr with "otp" and "mfa") and the request goes on to consent or
// the response.
func (e *Endpoint) ServeFactor(w http.ResponseWriter, r *http.Request) {
	web.PageHeaders(w.Header(), "")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		e.showError(w, r, FactorName, "", &pageError{status: http.StatusMethodNotAllowed, message: msgStartAgain,
			cause: errors.New("method not allowed")})
		return
	}
	if err := e.cfg.Guard.SameOrigin(r); err != nil {
		e.showError(w, r, FactorName, "", &pageError{status: http.StatusForbidden, message: msgCrossSite, cause: err})
		return
	}
	form, perr := oauth.ReadForm(w, r)
	if perr != nil {
		e.showError(w, r, FactorName, "", &pageError{status: max(perr.Status, http.StatusBadRequest), message: msgStartAgain, cause: perr})
		return
	}
	q, c, err := e.open(form.Get("request"), stepFactor)
	if err != nil {
		e.showError(w, r, FactorName, "", &pageError{status: http.StatusBadRequest, message: msgStartAgain, cause: err})
		return
	}
	ctx := r.Context()
	sess, ok, err := e.cfg.Sessions.Current(ctx, r)
	switch {
	case err != nil:
		e.fail(w, r, FactorName, q, c, oauth.ServerError(err))
		return
	case !ok || sess.ID != q.SessionID || sess.Subject != q.Subject:
		e.showError(w, r, FactorName, c.ID, &pageError{status: http.StatusForbidden, message: msgStartAgain,
			cause: errors.New("the session is not the one the second-factor form was shown for")})
		return
	case !e.cfg.Guard.Check(form.Get("csrf_token"), stepFactor, session.Binding(sess)):
		e.showError(w, r, FactorName, c.ID, &pageError{status: http.StatusForbidden, message: msgStale,
			cause: errors.New("anti-forgery token missing or not this session's")})
		return
	case e.cfg.Factors == nil:
		e.showError(w, r, FactorName, c.ID, &pageError{status: http.StatusNotFound, message: msgStartAgain,
			cause: errors.New("second factors are not configured")})
		return
	}
	user, ok, err := e.activeUser(r, sess.Subject)
	switch {
	case err != nil:
		e.fail(w, r, FactorName, q, c, oauth.ServerError(err))
		return
	case !ok:
		e.fail(w, r, FactorName, q, c, oauth.NewError(oauth.ErrAccessDenied, "the user is unknown or disabled"))
		return
	}
	code := strings.TrimSpace(form.Get("code"))
	passkeyState := form.Get("passkey_state")
	if code == "" && passkeyState == "" {
		e.showFactor(w, r, FactorName, q, c, sess, user, http.StatusBadRequest, msgMissingCode)
		return
	}
	// Six digits are a TOTP code; anything else can only be a recovery
	// code (their alphabets differ in length and letters).
	factor, wrong := "totp", msgBadCode
	amr := oauth.WithFactor(session.Methods(sess), oauth.AMROneTimePassword)
	check := e.cfg.Factors.CheckTOTP
	switch {
	case passkeyState != "":
		// A passkey of this user's (the ceremony is bound to them).
		factor, wrong = "passkey", msgBadPasskey
		check = func(ctx context.Context, user store.User, response, source string) error {
			_, methods, err := e.cfg.Factors.FinishPasskeyLogin(ctx, &user, passkeyState, []byte(response), source)
			amr = withMethods(session.Methods(sess), methods)
			return err
		}
		code = form.Get("response")
	case !factors.LooksLikeTOTP(code):
		factor, check = "recovery code", e.cfg.Factors.UseRecoveryCode
	}
	err = check(ctx, user, code, e.cfg.ClientIP(r))
	switch {
	case errors.Is(err, users.ErrBadCredentials), errors.Is(err, factors.ErrNoFactor), errors.Is(err, factors.ErrCeremony):
		e.log(r, FactorName, c.ID, oauth.ErrAccessDenied, "wrong second factor", err)
		e.showFactor(w, r, FactorName, q, c, sess, user, http.StatusUnauthorized, wrong)
		return
	case errors.Is(err, users.ErrBusy):
		e.log(r, FactorName, c.ID, oauth.ErrTemporarilyUnavail, "busy", err)
		e.showFactor(w, r, FactorName, q, c, sess, user, http.StatusServiceUnavailable, msgBusy)
		return
	case err != nil:
		e.fail(w, r, FactorName, q, c, oauth.ServerError(err))
		return
	}
	elevated, err := e.cfg.Sessions.Elevate(ctx, w, sess, amr)
	switch {
	case errors.Is(err, session.ErrEnded):
		e.log(r, FactorName, c.ID, oauth.ErrAccessDenied, "the user's sessions ended", err)
		e.showLogin(w, r, FactorName, q, c, http.StatusUnauthorized, user.Username, msgStartAgain)
		return
	case err != nil:
		e.fail(w, r, FactorName, q, c, oauth.ServerError(err))
		return
	}
	e.cfg.Audit.Info("second factor passed", zap.String("client_id", c.ID), zap.String("sub", user.Subject),
		zap.String("sid", elevated.ID), zap.String("factor", factor))
	e.proceed(w, r, FactorName, q, c, &login{session: elevated, user: user})
}
