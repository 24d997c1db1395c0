package identity

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/store"
)

// maxUsernameLen bounds the username a request may send.
const maxUsernameLen = 255

// passwordWait bounds how long a login waits for a hashing slot.
const passwordWait = 10 * time.Second

// errBadCredentials is the one answer to a wrong password, an unknown user
// and a disabled user, so none can be told apart (no enumeration).
func errBadCredentials(cause error) *Error {
	return &Error{Code: ErrCodeInvalidGrant, Description: "invalid username or password", Cause: cause}
}

// grantPassword is the resource owner password credentials grant (RFC 6749
// §4.3, interface.md §4.2).
func (s *Server) grantPassword(r *http.Request, c *client, form url.Values) (*tokenResponse, *Error) {
	username, password := form.Get("username"), form.Get("password")
	if username == "" || password == "" {
		return nil, invalidRequest("username and password are required")
	}
	scopes, perr := c.clientScopes(form.Get("scope"))
	if perr != nil {
		return nil, perr
	}
	user, perr := s.checkPassword(r, username, password)
	if perr != nil {
		return nil, perr
	}
	granted := intersect(scopes, user.Scopes)
	if len(granted) == 0 {
		return nil, oauthErr(ErrCodeInvalidScope, "none of the requested scopes is allowed for this user")
	}
	now := s.cfg.Now()
	resp, perr := s.issue(r.Context(), issueRequest{client: c, user: &user, subject: user.Subject, scopes: granted, authTime: now, grant: GrantPassword})
	if perr != nil {
		return nil, perr
	}
	return resp, nil
}

// checkPassword verifies a user's password under the brute-force guard
// and the hashing concurrency limit. A locked pair, an unknown user, a
// disabled user and a wrong password get the same answer after the same
// work: one password hash each.
func (s *Server) checkPassword(r *http.Request, username, password string) (store.User, *Error) {
	ctx := r.Context()
	if len(username) > maxUsernameLen || len(password) > maxPasswordLen {
		username, password = "", password[:min(len(password), maxPasswordLen)]
	}
	g := s.guardFor(r, username)
	locked, err := g.check(ctx)
	if err != nil {
		return store.User{}, serverError(err)
	}
	var user store.User
	lookupErr := store.ErrNotFound
	if username != "" && !locked {
		user, lookupErr = s.store.User(ctx, username)
	}
	if lookupErr != nil && !errors.Is(lookupErr, store.ErrNotFound) {
		return store.User{}, serverError(lookupErr)
	}
	hash := user.PasswordHash
	if lookupErr != nil {
		hash = s.dummyHash
	}
	ok, verr := s.verifyPassword(ctx, hash, password)
	if verr != nil {
		return store.User{}, verr
	}
	var reason string
	switch {
	case locked:
		reason = "locked out"
	case lookupErr != nil:
		reason = "unknown user"
	case !ok:
		reason = "wrong password"
	case user.Disabled:
		reason = "user disabled"
	}
	if reason != "" {
		if !locked {
			if err := g.failed(ctx); err != nil {
				return store.User{}, serverError(err)
			}
		}
		fields := []zap.Field{zap.String("reason", reason), zap.String("source", g.source[len("src:"):])}
		if lookupErr == nil {
			// Only a known user's name: an unknown "username" is often a
			// password typed in the wrong field.
			fields = append(fields, zap.String("sub", user.Subject), zap.String("username", user.Username))
		}
		s.audit.Info("login failed", fields...)
		return store.User{}, errBadCredentials(errors.New(reason))
	}
	if err := g.succeeded(ctx); err != nil {
		return store.User{}, serverError(err)
	}
	s.audit.Info("login succeeded", zap.String("sub", user.Subject), zap.String("source", g.source[len("src:"):]))
	user.Scopes = slices.Clone(user.Scopes)
	return user, nil
}

// verifyPassword checks a hash under the concurrency limit, waiting at
// most passwordWait for a slot.
func (s *Server) verifyPassword(ctx context.Context, hash, password string) (bool, *Error) {
	waitCtx, cancel := context.WithTimeout(ctx, passwordWait)
	defer cancel()
	select {
	case s.hashSlots <- struct{}{}:
	case <-waitCtx.Done():
		return false, &Error{Code: ErrCodeTemporarilyUnavail, Description: "the server is busy, try again", Status: http.StatusServiceUnavailable, Cause: waitCtx.Err()}
	}
	defer func() { <-s.hashSlots }()
	s.hashes.Add(1)
	ok, err := VerifyPassword(hash, password)
	if err != nil {
		return false, serverError(err)
	}
	return ok, nil
}
