package tokens

import (
	"errors"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
)

// Auditor receives the token service's audit records; package audit's
// Writer is one.
type Auditor interface {
	Append(kind audit.Kind, attrs ...audit.Attr) error
}

// recordIssued records the tokens of a grant issued, of type grant with
// the access token jti: a record of kind authentication (transport
// "token", outcome "ok") with the grant, the client, the subject, the
// scopes and the market-data pairs. Never a token.
func (s *Service) recordIssued(g Grant, grant, jti string) {
	if s.cfg.Record == nil {
		return
	}
	attrs := []audit.Attr{audit.String(audit.AttrTransport, "token"), audit.String("grant", grant),
		audit.String(audit.AttrClient, g.Client.ID), audit.String(audit.AttrSubject, g.Subject),
		audit.Strings("scopes", g.Scopes...), audit.Strings(audit.AttrEntitlements, g.Entitlements.Strings()...),
		audit.String("jti", jti), audit.String(audit.AttrOutcome, "ok")}
	if err := s.cfg.Record.Append(audit.KindAuthentication, attrs...); errors.Is(err, audit.ErrAttr) {
		s.cfg.Audit.Error("token audit record refused", zap.Error(err))
	}
}
