package wsauth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// Auditor receives the gateway's audit records; package audit's Writer is
// one (the Caddy glue passes the app's). Append is called from many
// goroutines, some holding a session's lock: it must not call the
// gateway. Refusing says that new sessions and logins are to be refused
// (the audit cannot write).
type Auditor interface {
	Append(kind audit.Kind, attrs ...audit.Attr) error
	Refusing() bool
}

// What the gateway records, once per event, never per relayed message:
//
//   - authentication: an upgrade's Authorization header or an Auth message
//     on an unauthenticated socket (method, result, reason when refused);
//     reauthentication: one on an authenticated socket (was_lapsed,
//     resubscribed, ended);
//   - lapse: authority lapsed (reason expired or revoked, refusal: the
//     verifier's reason); revocation: a re-verification narrowed the
//     entitlements (entitlements kept, removed);
//   - subscription_start and subscription_end: a subscription begins to
//     flow (a Sub, or a re-Sub after a fresh credential) and stops (reason
//     unsub, lapse, scope, entitlement or session_end), with its
//     controller, topic, and the venue (or venues) and feed the venue table
//     names;
//   - denial: a message refused (reason unauthenticated, policy, authority
//     lapsed, entitlement, subscriptions), or a session refused (sessions,
//     audit); a rate limit's refusals are counted, not recorded, so a
//     client cannot flood the audit;
//   - order: a Trading message of the OrderPad or Authorise scope
//     forwarded (controller, topic, transaction_id; never Data).
//
// Each names the session (a random id), the transport ("socket"), and once
// known the subject and client. Never a token, secret or password.

// The reasons a subscription ends (subscription_end's reason).
const (
	endUnsub       = "unsub"       // the client's Unsub
	endLapse       = "lapse"       // the session's authority lapsed
	endScope       = "scope"       // a fresh credential lacks the scope
	endEntitlement = "entitlement" // the entitlements no longer hold its venue
	endLimit       = "limit"       // a reconfiguration lowered the subscription limit under it
	endSession     = "session_end" // the session ended
)

// maxAuditTopic bounds a topic as the audit records it.
const maxAuditTopic = 256

type nopAuditor struct{}

func (nopAuditor) Append(audit.Kind, ...audit.Attr) error { return nil }
func (nopAuditor) Refusing() bool                         { return false }

// newSessionID is a session's id in the audit: 64 random bits in hex.
func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail
	return hex.EncodeToString(b[:])
}

// record appends one record; a refused record is the gateway's own fault
// and logged, a failed write the writer counts.
func (g *Gateway) record(kind audit.Kind, attrs ...audit.Attr) {
	if err := g.cfg().Hooks.Audit.Append(kind, attrs...); errors.Is(err, audit.ErrAttr) {
		g.log().Error("ws audit record refused", zap.String("kind", string(kind)), zap.Error(err))
	}
}

// auditing reports whether the gateway records anything: not when no
// Auditor was given, so the records' attributes are not even built.
func (g *Gateway) auditing() bool { return g.cfg().auditing }

// who are the attributes that name the session and, once authenticated,
// its subject and client: id is the identity.
func (s *session) who(id *Identity, more ...audit.Attr) []audit.Attr {
	a := make([]audit.Attr, 0, 4+len(more))
	a = append(a, audit.String(audit.AttrSession, s.sid), audit.String(audit.AttrTransport, "socket"))
	if id != nil && id.Subject != "" {
		a = append(a, audit.String(audit.AttrSubject, id.Subject), audit.String(audit.AttrClient, id.ClientID))
	}
	return append(a, more...)
}

// auditAuth records an authentication attempt of the session (id the
// identity it offered; nil or empty when none was found).
func (s *session) auditAuth(kind audit.Kind, method AuthMethod, result, reason string, id *Identity, more ...audit.Attr) {
	if !s.g.auditing() {
		return
	}
	a := []audit.Attr{audit.String("method", string(method)), audit.String(audit.AttrOutcome, auditOutcome(result))}
	if reason != "" {
		a = append(a, audit.String(audit.AttrReason, reason))
	}
	s.g.record(kind, s.who(id, append(a, more...)...)...)
}

// auditOutcome is an AuthResult as the audit's outcome: "ok" or the result.
func auditOutcome(result string) string {
	if result == AuthResultOK {
		return "ok"
	}
	return result
}

// auditMessage records a client message (a denial or an order): its
// controller, topic and TransactionID, never its Data.
func (s *session) auditMessage(kind audit.Kind, env *zenith.Envelope, more ...audit.Attr) {
	if !s.g.auditing() {
		return
	}
	a := []audit.Attr{audit.String(audit.AttrController, clip(env.Controller)), audit.String(audit.AttrTopic, clip(env.Topic))}
	if env.Present&zenith.HasTransactionID != 0 {
		a = append(a, audit.Int("transaction_id", env.TransactionID))
	}
	var id *Identity
	if s.in.state == StateAuthenticated {
		id = &s.auth.id
	}
	s.g.record(kind, s.who(id, append(a, more...)...)...)
}

// auditSubLocked records that the subscription k, whose Sub is msg, starts
// or ends (why is the end's reason). s.mu held.
func (s *session) auditSubLocked(kind audit.Kind, k subKey, msg []byte, why string) {
	if !s.g.auditing() {
		return
	}
	a := []audit.Attr{audit.String(audit.AttrController, clip(k.controller)), audit.String(audit.AttrTopic, clip(k.topic))}
	if s.g.cfg().Venues != nil {
		sub, _ := zenith.Scan(msg) // scanned once already: it reads
		a = s.g.venueAttrs(a, k.controller, k.topic, sub.Data)
	}
	if why != "" {
		a = append(a, audit.String(audit.AttrReason, why))
	}
	s.g.record(kind, s.who(&s.auth.id, a...)...)
}

// clip bounds a client's string as the audit records it.
func clip(s string) string {
	if len(s) > maxAuditTopic {
		return s[:maxAuditTopic]
	}
	return s
}

// auditHeader records an upgrade's Authorization header checked (the
// session sid's, if the upgrade goes on).
func (g *Gateway) auditHeader(sid, result, reason string, id *Identity) {
	if !g.auditing() {
		return
	}
	s := session{g: g, sid: sid}
	s.auditAuth(audit.KindAuthentication, AuthHeader, result, reason, id)
}

// deniedVenue adds to attrs, for a message refused for its venue, the
// venue (or venues) and feed it names.
func (s *session) deniedVenue(env *zenith.Envelope, why string, attrs ...audit.Attr) []audit.Attr {
	if s.g.cfg().Venues == nil || why != refusedEntitlement || !s.g.auditing() {
		return attrs
	}
	return s.g.venueAttrs(attrs, env.Controller, env.Topic, env.Data)
}

// venueAttrs appends to attrs what the venue table names of a message
// (policy.Venues.Of): venue, or venues when it names several or none
// readable, and feed; nothing for a topic without market data.
func (g *Gateway) venueAttrs(attrs []audit.Attr, controller, topic string, data []byte) []audit.Attr {
	switch venues, feed := g.cfg().Venues.Of(controller, topic, data); {
	case len(venues) == 1:
		attrs = append(attrs, audit.String(audit.AttrVenue, venues[0]), audit.String(audit.AttrFeed, feed))
	case feed != "":
		attrs = append(attrs, audit.Strings(audit.AttrVenues, venues...), audit.String(audit.AttrFeed, feed))
	}
	return attrs
}
