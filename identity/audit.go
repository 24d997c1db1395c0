package identity

import (
	"errors"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
)

// Auditor receives the identity server's audit records and says when the
// audit cannot write; package audit's Writer is one (the Caddy glue
// passes the app's).
//
// What the server records: a token issued by any grant (authentication,
// transport "token": grant, client_id, sub, scopes, entitlements, jti;
// tokens.Service), a login refused (authentication, method "password",
// outcome "reject": reason, source, and a known user's sub and username;
// users.Checker), a token revoked at the revocation endpoint (revocation:
// client_id, sub, and family_id or jti), and each event of a signing
// key's life (key_rotation: kid, event created, announced, rotated or
// removed; keys.Manager). Never a token, a secret or a password.
//
// While Refusing, logins (users.Checker: the token endpoint's password
// grant, the login page, the device verification, the message gateway's
// AuthOwner) and every token request are refused: 503
// temporarily_unavailable at the token endpoint (RFC 6749's code, as for a
// store outage), the busy page at the login page.
type Auditor interface {
	Append(kind audit.Kind, attrs ...audit.Attr) error
	Refusing() bool
}

// record appends one record when the server has an Auditor.
func (s *Server) record(kind audit.Kind, attrs ...audit.Attr) {
	if s.cfg.Audit == nil {
		return
	}
	if err := s.cfg.Audit.Append(kind, attrs...); errors.Is(err, audit.ErrAttr) {
		s.log.Error("identity audit record refused", zap.String("kind", string(kind)), zap.Error(err))
	}
}

// auditRefusing reports whether logins and token requests are refused
// now, because the audit cannot write.
func (s *Server) auditRefusing() bool { return s.cfg.Audit != nil && s.cfg.Audit.Refusing() }
