package account

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/factors"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/web"
)

// Name is the page's name in logs and metrics.
const Name = "account"

// enrolmentLifetime is how long an offered secret may be confirmed.
const enrolmentLifetime = 10 * time.Minute

// Purposes of the anti-forgery tokens.
const (
	csrfLogin   = "account-login"
	csrfAccount = "account"
)

// Actions of the page's forms.
const (
	actionLogin         = "login"
	actionTOTPBegin     = "totp-begin"
	actionTOTPConfirm   = "totp-confirm"
	actionTOTPRemove    = "totp-remove"
	actionRecoveryCodes = "recovery-codes"
	actionVerify        = "verify-factor"
	actionVerifyPasskey = "verify-passkey"
	actionPasskeyBegin  = "passkey-begin"
	actionPasskeyFinish = "passkey-finish"
	actionPasskeyRename = "passkey-rename"
	actionPasskeyRemove = "passkey-remove"
)

// Messages of the page.
const (
	msgBadCredentials   = "The username or password is incorrect."
	msgBadPassword      = "The password is incorrect."
	msgMissing          = "Enter your username and password."
	msgNeedPassword     = "Enter your password to make this change."
	msgBadCode          = "That code is not right. Enter the code your app shows now."
	msgBusy             = "The server is busy. Please try again in a moment."
	msgStale            = "This form has expired. Please try again."
	msgCrossSite        = "This form was sent from another site, so it was refused."
	msgServer           = "Something went wrong on our side. Please try again."
	msgExpired          = "This setup has expired. Start it again."
	msgEnrolled         = "Your authenticator app is set up. Keep these recovery codes somewhere safe: each works once, in place of a code, if you lose your phone. They are shown only now."
	msgNewCodes         = "Your new recovery codes: the old ones no longer work. They are shown only now."
	msgRemoved          = "Your authenticator app and recovery codes were removed."
	msgEnrolledAlready  = "An authenticator app is set up already: remove it first to set up another."
	msgVerifyFirst      = "Enter a code from your authenticator app (or a recovery code), or use a passkey, first: changing your second factor needs it."
	msgNoApp            = "No authenticator app is set up."
	msgSignedOut        = "Your authenticator app and recovery codes were removed, and you were signed out everywhere. Sign in again."
	msgPasskeyAdded     = "Your passkey was added."
	msgPasskeyRenamed   = "Your passkey was renamed."
	msgPasskeySignedOut = "Your passkey was removed, and you were signed out everywhere. Sign in again."
	msgPasskeyFailed    = "The passkey was not added: your browser's answer was not accepted, or the setup expired. Try again."
	msgPasskeyTwice     = "That passkey is added already."
	msgPasskeyName      = "A passkey's name is at most 64 characters of text."
	msgPasskeyUnknown   = "That passkey is not one of yours, or it was removed."
	msgPasskeyLimit     = "You have as many passkeys as you may: remove one to add another."
	msgPasskeysOff      = "Passkeys are not available on this server."
	msgPasskeyRefused   = "That passkey was not accepted. Try again, or use another way."
)

// Config configures the page.
type Config struct {
	// Path is the page's path, which its forms post to. Required.
	Path string
	// Sessions finds and starts login sessions. Required.
	Sessions *session.Manager
	// Guard makes the forms' anti-forgery tokens. Required.
	Guard *session.Guard
	// Passwords checks passwords under the brute-force defence. Required.
	Passwords *users.Checker
	// Factors keeps the second factors. Required.
	Factors *factors.Service
	// Users reads the session's user. Required.
	Users store.Users
	// Pages renders the page. Required.
	Pages *web.Pages
	// SealKey (32 bytes) seals the offered secret between the page's two
	// steps; every instance must share it. Required.
	SealKey []byte
	// ClientIP returns the request's source address for the brute-force
	// defence. Required.
	ClientIP func(*http.Request) string
	// Logger receives failures at Debug (Error for server faults).
	Logger *zap.Logger
	// Audit receives sign-ins. Default: no-op.
	Audit *zap.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Endpoint is the account page. It is safe for concurrent use.
type Endpoint struct {
	cfg  Config
	aead cipher.AEAD
}

// New checks cfg and returns the page.
func New(cfg Config) (*Endpoint, error) {
	if cfg.Path == "" || cfg.Sessions == nil || cfg.Guard == nil || cfg.Passwords == nil || cfg.Factors == nil ||
		cfg.Users == nil || cfg.Pages == nil || cfg.ClientIP == nil {
		return nil, errors.New("account page: missing dependency")
	}
	if len(cfg.SealKey) != 32 {
		return nil, errors.New("account page: the seal key must be 32 bytes")
	}
	block, err := aes.NewCipher(cfg.SealKey)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Audit == nil {
		cfg.Audit = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Endpoint{cfg: cfg, aead: aead}, nil
}

// ServeHTTP is GET|POST /connect/account. Without a session it shows a
// login form that comes back here. A post from another site, or without
// the anti-forgery token of the browser (login) or of the session (every
// change), is refused before anything is read.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	web.PageHeaders(w.Header(), "")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		e.show(w, r, http.StatusOK, "", "")
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		e.error(w, r, http.StatusMethodNotAllowed, msgStale, errors.New("method not allowed"))
		return
	}
	if err := e.cfg.Guard.SameOrigin(r); err != nil {
		e.error(w, r, http.StatusForbidden, msgCrossSite, err)
		return
	}
	form, perr := oauth.ReadForm(w, r)
	if perr != nil {
		e.error(w, r, max(perr.Status, http.StatusBadRequest), msgStale, perr)
		return
	}
	if form.Get("action") == actionLogin {
		e.login(w, r, form.Get("csrf_token"), form.Get("username"), form.Get("password"))
		return
	}
	sess, user, ok := e.current(w, r)
	if !ok {
		return
	}
	if !e.cfg.Guard.Check(form.Get("csrf_token"), csrfAccount, session.Binding(sess)) {
		e.error(w, r, http.StatusForbidden, msgStale, errors.New("anti-forgery token missing or not this session's"))
		return
	}
	action := form.Get("action")
	switch action {
	case actionVerify:
		e.verify(w, r, sess, user, form.Get("code"))
		return
	case actionVerifyPasskey:
		e.verifyPasskey(w, r, sess, user, form.Get("passkey_state"), form.Get("response"))
		return
	case actionTOTPBegin, actionTOTPRemove, actionRecoveryCodes, actionTOTPConfirm,
		actionPasskeyBegin, actionPasskeyFinish, actionPasskeyRename, actionPasskeyRemove:
	default:
		e.error(w, r, http.StatusBadRequest, msgStale, fmt.Errorf("unknown action %q", oauth.Truncate(action, 32)))
		return
	}
	// A user with a factor changes factors only from a session that
	// passed one: the password alone (stolen) must not replace the app
	// or mint recovery codes.
	st, err := e.cfg.Factors.Status(r.Context(), user.Subject)
	if err != nil {
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return
	}
	if st.Any() && !oauth.MultiFactor(sess.AMR) {
		e.render(w, r, http.StatusForbidden, sess, user, web.Account{Error: msgVerifyFirst})
		return
	}
	switch action {
	case actionTOTPBegin, actionTOTPRemove, actionRecoveryCodes:
		if !e.recheck(w, r, sess, user, form.Get("password")) {
			return
		}
		e.change(w, r, sess, user, st, action)
	case actionPasskeyBegin, actionPasskeyRename, actionPasskeyRemove:
		if !e.recheck(w, r, sess, user, form.Get("password")) {
			return
		}
		e.passkeyChange(w, r, sess, user, action, form.Get("passkey"), form.Get("name"))
	case actionPasskeyFinish:
		e.passkeyFinish(w, r, sess, user, form.Get("state"), form.Get("response"), form.Get("name"))
	case actionTOTPConfirm:
		if st.TOTP {
			e.render(w, r, http.StatusConflict, sess, user, web.Account{Error: msgEnrolledAlready})
			return
		}
		e.confirm(w, r, sess, user, form.Get("enrolment"), form.Get("code"))
	}
}

// verify checks a code of the user's second factor and elevates the
// session, as the authorization endpoint's step-up does.
func (e *Endpoint) verify(w http.ResponseWriter, r *http.Request, sess store.Session, user store.User, code string) {
	code = strings.TrimSpace(code)
	if code == "" {
		e.render(w, r, http.StatusBadRequest, sess, user, web.Account{Error: msgVerifyFirst})
		return
	}
	check := e.cfg.Factors.CheckTOTP
	if !factors.LooksLikeTOTP(code) {
		check = e.cfg.Factors.UseRecoveryCode
	}
	err := check(r.Context(), user, code, e.cfg.ClientIP(r))
	switch {
	case errors.Is(err, users.ErrBadCredentials), errors.Is(err, factors.ErrNoFactor):
		e.render(w, r, http.StatusUnauthorized, sess, user, web.Account{Error: msgBadCode})
		return
	case errors.Is(err, users.ErrBusy):
		e.render(w, r, http.StatusServiceUnavailable, sess, user, web.Account{Error: msgBusy})
		return
	case err != nil:
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return
	}
	e.elevate(w, r, sess, user, oauth.WithFactor(session.Methods(sess), oauth.AMROneTimePassword), web.Account{})
}

// elevate records that the session passed another factor, amr being the
// methods passed now (a new cookie), and renders d for it; a session
// ended meanwhile gets the login form.
func (e *Endpoint) elevate(w http.ResponseWriter, r *http.Request, sess store.Session, user store.User, amr []string, d web.Account) {
	elevated, err := e.cfg.Sessions.Elevate(r.Context(), w, sess, amr)
	switch {
	case errors.Is(err, session.ErrEnded):
		e.showLogin(w, r, http.StatusUnauthorized, user.Username, msgStale)
	case err != nil:
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
	default:
		e.render(w, r, http.StatusOK, elevated, user, d)
	}
}

// current is the request's session and its user; without one (or with a
// user since disabled or removed) it shows the login form and reports
// false.
func (e *Endpoint) current(w http.ResponseWriter, r *http.Request) (store.Session, store.User, bool) {
	sess, ok, err := e.cfg.Sessions.Current(r.Context(), r)
	if err != nil {
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return store.Session{}, store.User{}, false
	}
	if ok {
		user, err := e.cfg.Users.UserBySubject(r.Context(), sess.Subject)
		switch {
		case err == nil && !user.Disabled:
			return sess, user, true
		case err != nil && !errors.Is(err, store.ErrNotFound):
			e.error(w, r, http.StatusInternalServerError, msgServer, err)
			return store.Session{}, store.User{}, false
		}
	}
	e.showLogin(w, r, http.StatusOK, "", "")
	return store.Session{}, store.User{}, false
}

// show renders the page for the session, or the login form.
func (e *Endpoint) show(w http.ResponseWriter, r *http.Request, status int, notice, alert string) {
	sess, user, ok := e.current(w, r)
	if !ok {
		return
	}
	e.render(w, r, status, sess, user, web.Account{Notice: notice, Error: alert})
}

// render fills d with the session's user and factors and renders it.
func (e *Endpoint) render(w http.ResponseWriter, r *http.Request, status int, sess store.Session, user store.User, d web.Account) {
	st, err := e.cfg.Factors.Status(r.Context(), user.Subject)
	if err != nil {
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return
	}
	d.Action, d.Username = e.cfg.Path, user.Username
	d.CSRFToken = e.cfg.Guard.Token(csrfAccount, session.Binding(sess))
	d.TOTP, d.RecoveryCodesLeft = st.TOTP, st.RecoveryCodes
	if st.TOTP {
		d.TOTPSince = st.TOTPSince.UTC().Format("2 January 2006")
	}
	d.SecondFactor = oauth.MultiFactor(sess.AMR)
	if e.cfg.Factors.PasskeysOff() == "" || st.Passkeys > 0 {
		d.PasskeysOn = true
		keys, err := e.cfg.Factors.Passkeys(r.Context(), user.Subject)
		if err != nil {
			e.error(w, r, http.StatusInternalServerError, msgServer, err)
			return
		}
		d.Passkeys, d.PasskeyLimit = passkeyList(keys), len(keys) >= store.MaxPasskeys
		if len(keys) > 0 && !d.SecondFactor && d.Registration == nil && e.cfg.Factors.PasskeysOff() == "" {
			options, state, err := e.cfg.Factors.BeginPasskeyLogin(r.Context(), &user)
			if err != nil {
				e.error(w, r, http.StatusInternalServerError, msgServer, err)
				return
			}
			d.Verify = &web.PasskeyCeremony{Options: options, State: state}
		}
	}
	e.cfg.Pages.Account(w, r, status, d)
}

func (e *Endpoint) showLogin(w http.ResponseWriter, r *http.Request, status int, username, message string) {
	browser, err := e.cfg.Sessions.Browser(w, r)
	if err != nil {
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return
	}
	e.cfg.Pages.AccountLogin(w, r, status, web.Login{
		Action: e.cfg.Path, CSRFToken: e.cfg.Guard.Token(csrfLogin, browser), Username: username, Error: message,
	})
}

// login checks the login form and starts a session.
func (e *Endpoint) login(w http.ResponseWriter, r *http.Request, token, username, password string) {
	if !e.cfg.Guard.Check(token, csrfLogin, e.cfg.Sessions.BrowserOf(r)) {
		e.showLogin(w, r, http.StatusForbidden, username, msgStale)
		return
	}
	if username == "" || password == "" {
		e.showLogin(w, r, http.StatusBadRequest, username, msgMissing)
		return
	}
	at := e.cfg.Now()
	user, err := e.cfg.Passwords.Check(r.Context(), username, password, e.cfg.ClientIP(r))
	switch {
	case errors.Is(err, users.ErrBadCredentials):
		e.showLogin(w, r, http.StatusUnauthorized, username, msgBadCredentials)
		return
	case errors.Is(err, users.ErrBusy):
		e.showLogin(w, r, http.StatusServiceUnavailable, username, msgBusy)
		return
	case err != nil:
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return
	}
	sess, err := e.cfg.Sessions.Start(r.Context(), w, r, user.Subject, at)
	switch {
	case errors.Is(err, session.ErrEnded):
		e.showLogin(w, r, http.StatusUnauthorized, username, msgBadCredentials)
		return
	case err != nil:
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return
	}
	e.cfg.Audit.Info("account login", zap.String("sub", user.Subject), zap.String("sid", sess.ID))
	e.render(w, r, http.StatusOK, sess, user, web.Account{})
}

// recheck checks the session user's password again before a change; on
// failure it renders the page with why and reports false.
func (e *Endpoint) recheck(w http.ResponseWriter, r *http.Request, sess store.Session, user store.User, password string) bool {
	if password == "" {
		e.render(w, r, http.StatusBadRequest, sess, user, web.Account{Error: msgNeedPassword})
		return false
	}
	checked, err := e.cfg.Passwords.Check(r.Context(), user.Username, password, e.cfg.ClientIP(r))
	switch {
	case errors.Is(err, users.ErrBadCredentials):
		e.render(w, r, http.StatusUnauthorized, sess, user, web.Account{Error: msgBadPassword})
		return false
	case errors.Is(err, users.ErrBusy):
		e.render(w, r, http.StatusServiceUnavailable, sess, user, web.Account{Error: msgBusy})
		return false
	case err != nil:
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return false
	case checked.Subject != user.Subject:
		// A username reassigned to another user since the session began.
		e.render(w, r, http.StatusUnauthorized, sess, user, web.Account{Error: msgBadPassword})
		return false
	}
	return true
}

// change carries out a change the password was checked for.
func (e *Endpoint) change(w http.ResponseWriter, r *http.Request, sess store.Session, user store.User, st factors.Status, action string) {
	ctx := r.Context()
	switch action {
	case actionTOTPBegin:
		if st.TOTP {
			e.render(w, r, http.StatusConflict, sess, user, web.Account{Error: msgEnrolledAlready})
			return
		}
		en, err := e.cfg.Factors.NewEnrolment(user.Username)
		if err != nil {
			e.error(w, r, http.StatusInternalServerError, msgServer, err)
			return
		}
		e.offer(w, r, http.StatusOK, sess, user, en, "")
	case actionTOTPRemove:
		// Reset ends the user's sessions, this one included: every
		// session and token that passed the removed factor.
		if err := e.cfg.Factors.Reset(ctx, user); err != nil {
			e.error(w, r, http.StatusInternalServerError, msgServer, err)
			return
		}
		e.showLogin(w, r, http.StatusOK, user.Username, msgSignedOut)
	case actionRecoveryCodes:
		if !st.TOTP {
			e.render(w, r, http.StatusConflict, sess, user, web.Account{Error: msgNoApp})
			return
		}
		codes, err := e.cfg.Factors.NewRecoveryCodes(ctx, user)
		if err != nil {
			e.error(w, r, http.StatusInternalServerError, msgServer, err)
			return
		}
		e.render(w, r, http.StatusOK, sess, user, web.Account{Notice: msgNewCodes, RecoveryCodes: codes})
	}
}

// offer renders the enrolment of en: its QR code and key, and the form
// that confirms it with a first code, the secret sealed in it.
func (e *Endpoint) offer(w http.ResponseWriter, r *http.Request, status int, sess store.Session, user store.User,
	en factors.Enrolment, alert string) {
	sealed, err := e.seal(offered{Session: sess.ID, Secret: en.Secret, Expires: e.cfg.Now().Add(enrolmentLifetime).Unix()})
	if err != nil {
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return
	}
	qr, err := web.QRCode(en.URI)
	if err != nil {
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return
	}
	e.render(w, r, status, sess, user, web.Account{Error: alert, Enrolment: &web.Enrolment{
		QRCode: qr, Key: en.Key, URI: en.URI, Sealed: sealed,
	}})
}

// confirm enrols the offered secret if code is one of its codes now.
func (e *Endpoint) confirm(w http.ResponseWriter, r *http.Request, sess store.Session, user store.User, sealed, code string) {
	o, err := e.open(sealed)
	if err != nil || o.Session != sess.ID {
		e.render(w, r, http.StatusBadRequest, sess, user, web.Account{Error: msgExpired})
		return
	}
	en, err := e.cfg.Factors.Enrolment(user.Username, o.Secret)
	if err != nil {
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return
	}
	err = e.cfg.Factors.ConfirmTOTP(r.Context(), user, o.Secret, code, e.cfg.ClientIP(r))
	switch {
	case errors.Is(err, users.ErrBadCredentials):
		e.offer(w, r, http.StatusUnauthorized, sess, user, en, msgBadCode)
		return
	case errors.Is(err, users.ErrBusy):
		e.offer(w, r, http.StatusServiceUnavailable, sess, user, en, msgBusy)
		return
	case err != nil:
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return
	}
	codes, err := e.cfg.Factors.NewRecoveryCodes(r.Context(), user)
	if err != nil {
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return
	}
	// The first code proved the new factor: the session has passed it.
	e.elevate(w, r, sess, user, oauth.WithFactor(session.Methods(sess), oauth.AMROneTimePassword), web.Account{Notice: msgEnrolled, RecoveryCodes: codes})
}

// offered is what the confirmation form carries, sealed: the secret
// offered, to which session, until when.
type offered struct {
	Session string `json:"sid"`
	Secret  []byte `json:"s"`
	Expires int64  `json:"exp"`
}

var sealAAD = []byte("gatehouse account enrolment v1")

func (e *Endpoint) seal(o offered) (string, error) {
	plain, err := json.Marshal(o)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, e.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("reading randomness: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(e.aead.Seal(nonce, nonce, plain, sealAAD)), nil
}

// maxSealed bounds a sealed enrolment read back.
const maxSealed = 1 << 10

func (e *Endpoint) open(text string) (offered, error) {
	if text == "" || len(text) > maxSealed {
		return offered{}, errors.New("no sealed enrolment")
	}
	raw, err := base64.RawURLEncoding.DecodeString(text)
	ns := e.aead.NonceSize()
	if err != nil || len(raw) < ns {
		return offered{}, errors.New("malformed sealed enrolment")
	}
	plain, err := e.aead.Open(nil, raw[:ns], raw[ns:], sealAAD)
	if err != nil {
		return offered{}, errors.New("sealed enrolment does not open")
	}
	var o offered
	if err := json.Unmarshal(plain, &o); err != nil {
		return offered{}, err
	}
	if e.cfg.Now().Unix() >= o.Expires {
		return offered{}, errors.New("sealed enrolment expired")
	}
	return o, nil
}

// error renders an error page and logs why.
func (e *Endpoint) error(w http.ResponseWriter, r *http.Request, status int, message string, cause error) {
	level := e.cfg.Logger.Debug
	if status >= http.StatusInternalServerError {
		level = e.cfg.Logger.Error
	}
	level("request failed", zap.String("endpoint", Name), zap.Int("status", status), zap.String("remote_addr", r.RemoteAddr),
		zap.String("description", message), zap.NamedError("cause", cause))
	e.cfg.Pages.Error(w, r, status, web.Error{Heading: "Account", Message: message})
}
