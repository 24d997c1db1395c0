package authorize

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/web"
)

// needsConsent reports whether the user has not yet allowed the client
// every scope of granted (or the consent expired).
func (e *Endpoint) needsConsent(r *http.Request, subject, clientID string, granted []string) (bool, error) {
	c, err := e.cfg.Store.Consent(r.Context(), subject, clientID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true, nil
	case err != nil:
		return false, err
	}
	if !c.ExpiresAt.IsZero() && !e.cfg.Now().Before(c.ExpiresAt) {
		return true, nil
	}
	for _, s := range granted {
		if !slices.Contains(c.Scopes, s) {
			return true, nil
		}
	}
	return false, nil
}

// showConsent renders the consent page: the request sealed for the
// consent step with the user and session it is for, and an anti-forgery
// token bound to the session.
func (e *Endpoint) showConsent(w http.ResponseWriter, r *http.Request, name string, q *request, c *clients.Client, sess store.Session,
	user store.User, granted []string) {
	pq := *q
	pq.Subject, pq.SessionID = user.Subject, sess.ID
	pending, err := e.seal(&pq, stepConsent)
	if err != nil {
		e.fail(w, r, name, q, c, oauth.ServerError(err))
		return
	}
	d := web.Consent{
		Action: e.cfg.ConsentPath, ClientName: clientName(c), Username: user.Username,
		CSRFToken: e.cfg.Guard.Token(stepConsent, session.Binding(sess)), Pending: pending,
	}
	for _, s := range granted {
		d.Scopes = append(d.Scopes, web.DescribeScope(s))
	}
	e.cfg.Pages.Consent(w, r, d, web.Origin(q.RedirectURI))
}

// ServeConsent is POST /connect/consent, the consent page's answer. Like
// the login form it refuses posts from another site and without the
// session's anti-forgery token, changing nothing; the session must still
// be the one the page was shown for. Allow remembers the scopes for the
// user and client and sends the response; deny sends access_denied.
func (e *Endpoint) ServeConsent(w http.ResponseWriter, r *http.Request) {
	web.PageHeaders(w.Header(), "")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		e.showError(w, r, ConsentName, "", &pageError{status: http.StatusMethodNotAllowed, message: msgStartAgain,
			cause: errors.New("method not allowed")})
		return
	}
	if err := e.cfg.Guard.SameOrigin(r); err != nil {
		e.showError(w, r, ConsentName, "", &pageError{status: http.StatusForbidden, message: msgCrossSite, cause: err})
		return
	}
	form, perr := oauth.ReadForm(w, r)
	if perr != nil {
		e.showError(w, r, ConsentName, "", &pageError{status: max(perr.Status, http.StatusBadRequest), message: msgStartAgain, cause: perr})
		return
	}
	q, c, err := e.open(form.Get("request"), stepConsent)
	if err != nil {
		e.showError(w, r, ConsentName, "", &pageError{status: http.StatusBadRequest, message: msgStartAgain, cause: err})
		return
	}
	ctx := r.Context()
	sess, ok, err := e.cfg.Sessions.Current(ctx, r)
	switch {
	case err != nil:
		e.fail(w, r, ConsentName, q, c, oauth.ServerError(err))
		return
	case !ok || sess.ID != q.SessionID || sess.Subject != q.Subject:
		e.showError(w, r, ConsentName, c.ID, &pageError{status: http.StatusForbidden, message: msgStartAgain,
			cause: errors.New("the session is not the one the consent page was shown for")})
		return
	case !e.cfg.Guard.Check(form.Get("csrf_token"), stepConsent, session.Binding(sess)):
		e.showError(w, r, ConsentName, c.ID, &pageError{status: http.StatusForbidden, message: msgStale,
			cause: errors.New("anti-forgery token missing or not this session's")})
		return
	}
	user, ok, err := e.activeUser(r, sess.Subject)
	switch {
	case err != nil:
		e.fail(w, r, ConsentName, q, c, oauth.ServerError(err))
		return
	case !ok:
		e.fail(w, r, ConsentName, q, c, oauth.NewError(oauth.ErrAccessDenied, "the user is unknown or disabled"))
		return
	}
	granted, perr := e.grantedScopes(q, user, sess)
	if perr != nil {
		e.fail(w, r, ConsentName, q, c, perr)
		return
	}
	decision := form.Get("decision")
	if decision != "allow" && decision != "deny" {
		e.showError(w, r, ConsentName, c.ID, &pageError{status: http.StatusBadRequest, message: msgStartAgain,
			cause: errors.New("no decision")})
		return
	}
	// The first answer uses the form up, on every instance: Allow after
	// Deny, or Allow twice, is no second answer.
	switch first, err := e.useForm(ctx, form.Get("request")); {
	case err != nil:
		e.fail(w, r, ConsentName, q, c, oauth.ServerError(err))
		return
	case !first:
		e.showError(w, r, ConsentName, c.ID, &pageError{status: http.StatusBadRequest, message: msgStartAgain,
			cause: errors.New("the consent form was answered already")})
		return
	}
	if decision == "deny" {
		e.cfg.Audit.Info("consent denied", zap.String("client_id", c.ID), zap.String("sub", user.Subject))
		e.fail(w, r, ConsentName, q, c, oauth.NewError(oauth.ErrAccessDenied, "the user denied the request"))
		return
	}
	if err := e.remember(r, user.Subject, c.ID, granted); err != nil {
		e.fail(w, r, ConsentName, q, c, oauth.ServerError(err))
		return
	}
	e.cfg.Audit.Info("consent given", zap.String("client_id", c.ID), zap.String("sub", user.Subject), zap.Strings("scopes", granted))
	e.respond(w, r, ConsentName, q, c, sess, user, granted)
}

// useForm marks the sealed form text as answered; first is false when it
// was answered before. The mark is a counter of the store's (Admit, a
// limit of one, for the form's lifetime), so concurrent answers on any
// instance get one first between them.
func (e *Endpoint) useForm(ctx context.Context, text string) (first bool, err error) {
	// Keyed on the sealed form's nonce, not its text: base64 decoding skips line
	// breaks and ignores unused bits, so several texts open as one form.
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(raw) < e.aead.NonceSize() {
		return false, nil // open has refused it already
	}
	sum := sha256.Sum256(raw[:e.aead.NonceSize()])
	key := "consent-form:" + base64.RawURLEncoding.EncodeToString(sum[:18])
	life := e.cfg.PendingLifetime
	_, admitted, err := e.cfg.Store.Admit(ctx, key, e.cfg.Now(), life, 1, life)
	return admitted, err
}

// remember adds granted to the user's consent to the client.
func (e *Endpoint) remember(r *http.Request, subject, clientID string, granted []string) error {
	ctx := r.Context()
	scopes := slices.Clone(granted)
	if old, err := e.cfg.Store.Consent(ctx, subject, clientID); err == nil && (old.ExpiresAt.IsZero() || e.cfg.Now().Before(old.ExpiresAt)) {
		for _, s := range old.Scopes {
			if !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return e.cfg.Store.PutConsent(ctx, store.Consent{Subject: subject, ClientID: clientID, Scopes: scopes, Created: e.cfg.Now()})
}
