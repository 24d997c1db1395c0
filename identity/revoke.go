package identity

import (
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// serveRevocation is POST /connect/revocation (RFC 7009). A refresh token
// revokes its family and the access tokens issued from it; an access
// token is revoked by its jti. Unknown, expired and other clients' tokens
// get 200 as well and change nothing (RFC 7009 §2.2).
func (s *Server) serveRevocation(w http.ResponseWriter, r *http.Request) {
	fail := s.failer("revocation")
	oauth.SecurityHeaders(w.Header(), s.cfg.HSTS)
	if r.Method == http.MethodOptions {
		oauth.Preflight(w, r, "POST", s.clients.AnyAllowsOrigin)
		return
	}
	origin := r.Header.Get("Origin")
	if origin != "" && s.clients.AnyAllowsOrigin(origin) {
		oauth.AllowOrigin(w.Header(), origin)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		fail.Fail(w, r, "", "", oauth.MethodNotAllowed("the revocation endpoint takes POST"))
		return
	}
	form, perr := oauth.ReadForm(w, r)
	if perr != nil {
		fail.Fail(w, r, "", "", perr)
		return
	}
	c, perr := s.clients.Authenticate(r, form)
	if perr != nil {
		fail.Fail(w, r, "", form.Get("client_id"), perr)
		return
	}
	if origin != "" && !c.AllowsOrigin(origin) {
		w.Header().Del("Access-Control-Allow-Origin")
	}
	token := form.Get("token")
	if token == "" {
		fail.Fail(w, r, "", c.ID, oauth.InvalidRequest("missing token"))
		return
	}
	var err error
	if len(token) <= maxTokenParam {
		if strings.Count(token, ".") == 2 {
			err = s.revokeAccess(r, c, token)
		} else {
			err = s.revokeRefresh(r, c, token)
		}
	}
	if err != nil {
		fail.Fail(w, r, "", c.ID, oauth.ServerError(err))
		return
	}
	w.WriteHeader(http.StatusOK)
}

// revokeRefresh revokes the family of a refresh token this server minted
// for c, whatever the token's generation: an earlier one, rotated since,
// ends the family as the current one does (the token endpoint, shown the
// same token, would revoke it as a replay). A token not minted here,
// unknown, of another client, or of a family already revoked or expired
// changes nothing (RFC 7009 §2.2).
func (s *Server) revokeRefresh(r *http.Request, c *clients.Client, token string) error {
	fam, ok, err := s.tokens.FamilyOf(r.Context(), token)
	if err != nil || !ok {
		return err
	}
	if fam.ClientID != c.ID {
		s.log.Debug("revocation of another client's token ignored", zap.String("client_id", c.ID))
		return nil
	}
	if now := s.tokens.Now(); !fam.RevokedAt.IsZero() || !now.Before(fam.ExpiresAt) {
		return nil
	}
	since := s.tokens.Now() // before the revocation's stamp
	if err := s.tokens.Revoke(r.Context(), fam.ID); err != nil {
		return err
	}
	s.audit.Info("refresh token revoked", zap.String("client_id", c.ID), zap.String("sub", fam.Subject), zap.String("family_id", fam.ID))
	s.record(audit.KindRevocation, audit.String(audit.AttrTransport, "token"), audit.String(audit.AttrClient, c.ID),
		audit.String(audit.AttrSubject, fam.Subject), audit.String("family_id", fam.ID), audit.String("what", "refresh_token"))
	return s.verifier.RevokedHere(r.Context(), since)
}

func (s *Server) revokeAccess(r *http.Request, c *clients.Client, token string) error {
	id, err := s.verifier.Verify(r.Context(), token)
	if err != nil || id.ClientID != c.ID || id.JTI == "" {
		return nil // invalid, expired, already revoked, or not this client's
	}
	// Kept past the token's expiry as long as a verifier may still accept
	// it (its leeway): dropped at exp, the revocation would let it back in.
	now := s.cfg.Now()
	if err := s.store.RevokeAccessToken(r.Context(), id.JTI, id.Expiry.Add(verify.MaxLeeway), now); err != nil {
		return err
	}
	s.audit.Info("access token revoked", zap.String("client_id", c.ID), zap.String("sub", id.Subject), zap.String("jti", id.JTI))
	s.record(audit.KindRevocation, audit.String(audit.AttrTransport, "token"), audit.String(audit.AttrClient, c.ID),
		audit.String(audit.AttrSubject, id.Subject), audit.String("jti", id.JTI), audit.String("what", "access_token"))
	return s.verifier.RevokedHere(r.Context(), now)
}
