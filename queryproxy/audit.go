package queryproxy

import (
	"errors"
	"net/http"
	"slices"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
)

// Auditor receives the service's audit records; package audit's Writer is
// one (the Caddy glue passes the app's). Refusing says that queries are
// to be refused, because the audit cannot write: they are answered 503
// unavailable, before the caller is authenticated.
type Auditor interface {
	Append(kind audit.Kind, attrs ...audit.Attr) error
	Refusing() bool
}

type nopAuditor struct{}

func (nopAuditor) Append(audit.Kind, ...audit.Attr) error { return nil }
func (nopAuditor) Refusing() bool                         { return false }

// audit records one query once it is answered, reads included: a record
// of kind query with the caller (sub, client_id), the request_id, the
// endpoint, the statement's kind (statement: select, insert, update,
// delete; absent when it did not parse), the table, for a venue table the
// feed and the venues the caller's filter allowed, the rows sent or
// affected (when known), the outcome ("ok" or the error code) and the
// HTTP status. Never the statement, its values or a token. Requests that
// are not queries (an unknown route, a preflight, another method, a bad
// Request-Id) are not recorded.
func (h *Handler) audit(req *request) {
	if !req.audited {
		return
	}
	a := make([]audit.Attr, 0, 12)
	if c := req.caller; c != nil {
		if c.Subject != "" {
			a = append(a, audit.String(audit.AttrSubject, c.Subject))
		}
		a = append(a, audit.String(audit.AttrClient, c.ClientID))
	}
	a = append(a, audit.String("request_id", req.id), audit.String("endpoint", req.endpoint),
		audit.String(audit.AttrTable, req.table), audit.String(audit.AttrOutcome, req.outcome),
		audit.Int("status", int64(httpStatus(req.status))))
	if req.kind != "" {
		a = append(a, audit.String("statement", req.kind))
	}
	if req.feed != "" {
		a = append(a, audit.String(audit.AttrFeed, req.feed), audit.Strings(audit.AttrVenues, slices.Sorted(slices.Values(req.venues))...))
	}
	if req.rows >= 0 {
		a = append(a, audit.Int(audit.AttrRows, req.rows))
	}
	if err := h.cfg.Audit.Append(audit.KindQuery, a...); errors.Is(err, audit.ErrAttr) {
		h.log.Error("query audit record refused", zap.String("request_id", req.id), zap.Error(err))
	}
}

// httpStatus is a request's HTTP status: a failure's, else 200.
func httpStatus(status int) int {
	if status == 0 {
		return http.StatusOK
	}
	return status
}

// planned notes what the policy planned for the request: its table and,
// for a venue table, the feed and venues the caller's filter allows.
func (req *request) planned(pl *plan) {
	req.table, req.venues, req.feed = pl.table, pl.venues, pl.feed
}
