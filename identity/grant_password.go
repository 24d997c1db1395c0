package identity

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"time"

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
	user, perr := s.checkPassword(r.Context(), username, password)
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

// checkPassword verifies a user's password under the hashing concurrency
// limit. Unknown and disabled users cost the same hash as a real one.
func (s *Server) checkPassword(ctx context.Context, username, password string) (store.User, *Error) {
	if len(username) > maxUsernameLen || len(password) > maxPasswordLen {
		// Still hash, so the answer takes as long as any other.
		username, password = "", password[:min(len(password), maxPasswordLen)]
	}
	var user store.User
	var lookupErr error
	if username != "" {
		user, lookupErr = s.store.User(ctx, username)
	} else {
		lookupErr = store.ErrNotFound
	}
	if lookupErr != nil && !errors.Is(lookupErr, store.ErrNotFound) {
		return store.User{}, serverError(lookupErr)
	}
	hash := user.PasswordHash
	if lookupErr != nil {
		hash = s.dummyHash
	}
	waitCtx, cancel := context.WithTimeout(ctx, passwordWait)
	defer cancel()
	select {
	case s.hashSlots <- struct{}{}:
	case <-waitCtx.Done():
		return store.User{}, &Error{Code: ErrCodeTemporarilyUnavail, Description: "the server is busy, try again", Status: http.StatusServiceUnavailable, Cause: waitCtx.Err()}
	}
	ok, verr := VerifyPassword(hash, password)
	<-s.hashSlots
	switch {
	case lookupErr != nil:
		return store.User{}, errBadCredentials(errors.New("unknown user"))
	case verr != nil:
		return store.User{}, serverError(verr)
	case !ok:
		return store.User{}, errBadCredentials(errors.New("wrong password"))
	case user.Disabled:
		return store.User{}, errBadCredentials(errors.New("user disabled"))
	}
	user.Scopes = slices.Clone(user.Scopes)
	return user, nil
}
