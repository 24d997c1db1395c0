package account

import (
	"encoding/base64"
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/factors"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/web"
)

// The account page's passkeys: add one (the password first, then the
// browser's ceremony), rename or remove one (the password again).

// passkeyList is keys as the page lists them.
func passkeyList(keys []store.Passkey) []web.Passkey {
	out := make([]web.Passkey, len(keys))
	for i, k := range keys {
		out[i] = web.Passkey{ID: base64.RawURLEncoding.EncodeToString(k.ID), Name: k.Name,
			Created: k.Created.UTC().Format("2 January 2006")}
		if !k.LastUsed.IsZero() {
			out[i].LastUsed = k.LastUsed.UTC().Format("2 January 2006")
		}
	}
	return out
}

// passkeyChange carries out a passkey change the password was checked
// for: the start of a registration (its ceremony for the page's script),
// a rename or a removal of one of the user's passkeys (id, base64url).
func (e *Endpoint) passkeyChange(w http.ResponseWriter, r *http.Request, sess store.Session, user store.User, action, id, name string) {
	ctx := r.Context()
	if action == actionPasskeyBegin {
		options, state, err := e.cfg.Factors.BeginPasskeyRegistration(ctx, user)
		switch {
		case errors.Is(err, factors.ErrPasskeysOff):
			e.render(w, r, http.StatusNotFound, sess, user, web.Account{Error: msgPasskeysOff})
		case errors.Is(err, store.ErrTooManyPasskeys):
			e.render(w, r, http.StatusConflict, sess, user, web.Account{Error: msgPasskeyLimit})
		case err != nil:
			e.error(w, r, http.StatusInternalServerError, msgServer, err)
		default:
			if len(name) > store.MaxPasskeyName {
				e.render(w, r, http.StatusBadRequest, sess, user, web.Account{Error: msgPasskeyName})
				return
			}
			e.render(w, r, http.StatusOK, sess, user, web.Account{
				Registration: &web.PasskeyCeremony{Options: options, State: state, Name: name}})
		}
		return
	}
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(raw) == 0 || len(raw) > store.MaxCredentialID {
		e.render(w, r, http.StatusNotFound, sess, user, web.Account{Error: msgPasskeyUnknown})
		return
	}
	if action == actionPasskeyRename {
		err = e.cfg.Factors.RenamePasskey(ctx, user, raw, name)
	} else {
		err = e.cfg.Factors.RemovePasskey(ctx, user, raw)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		e.render(w, r, http.StatusNotFound, sess, user, web.Account{Error: msgPasskeyUnknown})
	case errors.Is(err, factors.ErrPasskeyName):
		e.render(w, r, http.StatusBadRequest, sess, user, web.Account{Error: msgPasskeyName})
	case err != nil:
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
	case action != actionPasskeyRename:
		// RemovePasskey ended the user's sessions, this one included.
		e.showLogin(w, r, http.StatusOK, user.Username, msgPasskeySignedOut)
	default:
		e.render(w, r, http.StatusOK, sess, user, web.Account{Notice: msgPasskeyRenamed})
	}
}

// passkeyFinish stores the passkey the browser made in the ceremony of
// state: a state the page gave this user after their password, within
// factors.CeremonyLifetime.
func (e *Endpoint) passkeyFinish(w http.ResponseWriter, r *http.Request, sess store.Session, user store.User, state, response, name string) {
	_, err := e.cfg.Factors.FinishPasskeyRegistration(r.Context(), user, state, []byte(response), name)
	switch {
	case errors.Is(err, factors.ErrCeremony), errors.Is(err, users.ErrBadCredentials):
		e.cfg.Logger.Debug("passkey registration refused", zap.String("endpoint", Name), zap.String("sub", user.Subject), zap.Error(err))
		e.render(w, r, http.StatusBadRequest, sess, user, web.Account{Error: msgPasskeyFailed})
	case errors.Is(err, store.ErrAlreadyExists):
		e.render(w, r, http.StatusConflict, sess, user, web.Account{Error: msgPasskeyTwice})
	case errors.Is(err, store.ErrTooManyPasskeys):
		e.render(w, r, http.StatusConflict, sess, user, web.Account{Error: msgPasskeyLimit})
	case errors.Is(err, factors.ErrPasskeyName):
		e.render(w, r, http.StatusBadRequest, sess, user, web.Account{Error: msgPasskeyName})
	case errors.Is(err, factors.ErrPasskeysOff):
		e.render(w, r, http.StatusNotFound, sess, user, web.Account{Error: msgPasskeysOff})
	case err != nil:
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
	default:
		e.render(w, r, http.StatusOK, sess, user, web.Account{Notice: msgPasskeyAdded})
	}
}

// verifyPasskey checks one of the user's passkeys and elevates the
// session, as verify does with a code: a user whose factor is a passkey
// changes factors from a session that passed it.
func (e *Endpoint) verifyPasskey(w http.ResponseWriter, r *http.Request, sess store.Session, user store.User, state, response string) {
	_, methods, err := e.cfg.Factors.FinishPasskeyLogin(r.Context(), &user, state, []byte(response), e.cfg.ClientIP(r))
	switch {
	case errors.Is(err, users.ErrBadCredentials), errors.Is(err, factors.ErrCeremony), errors.Is(err, factors.ErrPasskeysOff):
		e.cfg.Logger.Debug("passkey refused", zap.String("endpoint", Name), zap.String("sub", user.Subject), zap.Error(err))
		e.render(w, r, http.StatusUnauthorized, sess, user, web.Account{Error: msgPasskeyRefused})
		return
	case errors.Is(err, users.ErrBusy):
		e.render(w, r, http.StatusServiceUnavailable, sess, user, web.Account{Error: msgBusy})
		return
	case err != nil:
		e.error(w, r, http.StatusInternalServerError, msgServer, err)
		return
	}
	amr := session.Methods(sess)
	for _, m := range methods {
		amr = oauth.WithFactor(amr, m)
	}
	e.elevate(w, r, sess, user, amr, web.Account{})
}
