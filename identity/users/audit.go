package users

import (
	"errors"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
)

// Auditor receives the checker's audit records; package audit's Writer is
// one.
type Auditor interface {
	Append(kind audit.Kind, attrs ...audit.Attr) error
}

// recordFailure records a login refused: a record of kind authentication
// (method "password", outcome "reject") with the reason, the source, and
// for a known user the subject and username (an unknown "username" is
// often a password typed in the wrong field). Never the password.
func (c *Checker) recordFailure(reason, src string, known bool, subject, username string) {
	if c.cfg.Record == nil {
		return
	}
	attrs := []audit.Attr{audit.String("method", "password"), audit.String(audit.AttrOutcome, "reject"),
		audit.String(audit.AttrReason, reason), audit.String("source", src)}
	if known {
		attrs = append(attrs, audit.String(audit.AttrSubject, subject), audit.String("username", username))
	}
	if err := c.cfg.Record.Append(audit.KindAuthentication, attrs...); errors.Is(err, audit.ErrAttr) {
		c.cfg.Audit.Error("login audit record refused", zap.Error(err))
	}
}

// ErrAuditRefusing is the cause of the ErrBusy of a login refused while
// the audit cannot write (CheckerConfig.Refusing).
var ErrAuditRefusing = errors.New("the audit cannot write")
