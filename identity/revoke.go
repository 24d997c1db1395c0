package identity

import (
	"errors"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/store"
)

// serveRevocation is POST /connect/revocation (RFC 7009). A refresh token
// revokes its family and the access tokens issued from it; an access
// token is revoked by its jti. Unknown, expired and other clients' tokens
// get 200 as well and change nothing (RFC 7009 §2.2).
func (s *Server) serveRevocation(w http.ResponseWriter, r *http.Request) {
	noStore(w.Header(), s.cfg.HSTS)
	if r.Method == http.MethodOptions {
		s.preflight(w, r, "POST")
		return
	}
	origin := r.Header.Get("Origin")
	if origin != "" && s.anyClientAllowsOrigin(origin) {
		allowOrigin(w.Header(), origin)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		s.fail(w, r, "", "", &Error{Code: ErrCodeInvalidRequest, Description: "the revocation endpoint takes POST", Status: http.StatusMethodNotAllowed})
		return
	}
	form, perr := readForm(w, r)
	if perr != nil {
		s.fail(w, r, "", "", perr)
		return
	}
	c, perr := s.authenticateClient(r, form)
	if perr != nil {
		s.fail(w, r, "", form.Get("client_id"), perr)
		return
	}
	if origin != "" && !c.allowsOrigin(origin) {
		w.Header().Del("Access-Control-Allow-Origin")
	}
	token := form.Get("token")
	if token == "" {
		s.fail(w, r, "", c.ID, invalidRequest("missing token"))
		return
	}
	var err error
	if len(token) <= maxIntrospectToken {
		if strings.Count(token, ".") == 2 {
			err = s.revokeAccess(r, c, token)
		} else {
			err = s.revokeRefresh(r, c, token)
		}
	}
	if err != nil {
		s.fail(w, r, "", c.ID, serverError(err))
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) revokeRefresh(r *http.Request, c *client, token string) error {
	if len(token) > maxRefreshTokenLen {
		return nil
	}
	_, fam, err := s.store.RefreshToken(r.Context(), hashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if fam.ClientID != c.ID {
		s.log.Debug("revocation of another client's token ignored", zap.String("client_id", c.ID))
		return nil
	}
	if err := s.store.RevokeRefreshFamily(r.Context(), fam.ID, s.cfg.Now()); err != nil {
		return err
	}
	s.audit.Info("refresh token revoked", zap.String("client_id", c.ID), zap.String("sub", fam.Subject), zap.String("family_id", fam.ID))
	return s.verifier.RefreshRevocations(r.Context())
}

func (s *Server) revokeAccess(r *http.Request, c *client, token string) error {
	id, err := s.verifier.Verify(r.Context(), token)
	if err != nil || id.ClientID != c.ID || id.JTI == "" {
		return nil // invalid, expired, already revoked, or not this client's
	}
	if err := s.store.RevokeAccessToken(r.Context(), id.JTI, id.Expiry, s.cfg.Now()); err != nil {
		return err
	}
	s.audit.Info("access token revoked", zap.String("client_id", c.ID), zap.String("sub", id.Subject), zap.String("jti", id.JTI))
	return s.verifier.RefreshRevocations(r.Context())
}
