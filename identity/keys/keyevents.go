package keys

import (
	"errors"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
)

// Auditor receives the key schedule's audit records; package audit's
// Writer is one.
type Auditor interface {
	Append(kind audit.Kind, attrs ...audit.Attr) error
}

// The events of a signing key's life, as key_rotation records name them.
const (
	keyCreated   = "created"   // a key that signs at once: a first start, or every key retired
	keyAnnounced = "announced" // a successor published ahead of signing
	keyRotated   = "rotated"   // a forced rotation (Rotate, RotateRevoking)
	keyRemoved   = "removed"   // a key left the store (and so the JWKS)
)

// SetAuditor makes the manager record each event of a signing key's life
// as a key_rotation record (the kid and the event). Call it before Sync
// and Run; nil records nothing.
func (m *Manager) SetAuditor(a Auditor) { m.rec = a }

// record appends one key_rotation record of the key kid.
func (m *Manager) record(kid, event string, more ...audit.Attr) {
	if m.rec == nil {
		return
	}
	attrs := append([]audit.Attr{audit.String(audit.AttrKeyID, kid), audit.String("event", event),
		audit.String("key", "signing")}, more...)
	if err := m.rec.Append(audit.KindKeyRotation, attrs...); errors.Is(err, audit.ErrAttr) {
		m.log.Error("key audit record refused", zap.Error(err))
	}
}
