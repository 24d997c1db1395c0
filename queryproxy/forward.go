package queryproxy

import (
	"errors"
	"net/http"
	"strconv"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// forward serves a request with the Forwarder: the grammar check, the
// policy (per-user rows are the upstream's: it knows the user from the
// token, so no owner filter is added; a venue table's filter is added to
// the statement, which the grammar check passes again), the names
// resolved, the statement re-printed and sent.
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, req *request, stmt iql.Statement) {
	fw := h.cfg.Forwarder
	if what := fw.Check(stmt); what != "" {
		h.fail(w, req, &Error{Status: http.StatusBadRequest, Code: CodeInvalidStatement,
			Message: what + " is not in the query language of this service's upstream"})
		return
	}
	req.step(spanAuthorize)
	cat, err := fw.Catalog(r.Context())
	if err != nil {
		h.fail(w, req, forwardError(err))
		return
	}
	pl, e := h.policy.authorize(cat, req.caller, stmt, fw.Check)
	if e != nil {
		h.fail(w, req, e)
		return
	}
	req.planned(pl)
	if pl.empty {
		// A venue table of whose venues the caller holds none: no row
		// to ask the upstream for.
		_, cols, err := sqlgen.Resolve(pl.catalog.Tables[0], stmt)
		if err != nil {
			h.fail(w, req, resolveError(err))
			return
		}
		h.stream(w, req, &memRows{cols: cols, i: -1}, forwardError)
		return
	}
	resolved, cols, err := sqlgen.Resolve(pl.catalog.Tables[0], pl.stmt)
	if err != nil {
		h.fail(w, req, resolveError(err))
		return
	}
	freq := engine.ForwardRequest{IQL: iql.Format(resolved), Token: req.caller.Token, RequestID: req.id,
		Write: pl.write, Columns: cols, MaxRows: h.cfg.MaxRows}
	req.step(spanEngine)
	res, err := fw.Forward(r.Context(), freq)
	if pl.write {
		h.forwardedWrite(w, req, res, err)
		return
	}
	if err != nil {
		h.fail(w, req, forwardError(err))
		return
	}
	defer res.Rows.Close()
	h.stream(w, req, res.Rows, forwardError)
}

// forwardedWrite answers a forwarded insert and writes its audit entry
// (who, table, kind, count; never a value). An insert the upstream may
// have applied without saying so (its time limit passed, or the
// connection failed, once the statement was sent) is audited with the
// outcome "unknown" and no count, and the caller is told that it may
// have been applied: a retry could place an order twice.
func (h *Handler) forwardedWrite(w http.ResponseWriter, req *request, res *engine.ForwardResult, err error) {
	outcome, n := "ok", int64(0)
	var e *Error
	switch {
	case err == nil:
		n = res.RowsAffected
	case errors.Is(err, engine.ErrFateUnknown):
		outcome = "unknown"
		e = &Error{Status: http.StatusBadGateway, Code: CodeOutcomeUnknown,
			Message: "the insert was sent to the upstream query service, which did not say whether it applied it: look before sending it again", cause: err}
	default:
		e = forwardError(err)
		outcome = e.Code
	}
	fields := []zap.Field{zap.String("request_id", req.id), zap.String("user", req.caller.Subject),
		zap.String("client_id", req.caller.ClientID), zap.String("table", req.table), zap.String("kind", "insert"),
		zap.String("outcome", outcome), zap.String("engine", "iq")}
	if outcome != "unknown" {
		fields = append(fields, zap.Int64("rows_affected", n))
	}
	h.log.Info("query write", fields...)
	if e != nil {
		h.fail(w, req, e)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(`{"RowsAffected":` + strconv.FormatInt(n, 10) + "}\n"))
	req.rows = n
	h.done(req, "ok")
}

// forwardError maps a Forwarder's error: 502 a bad answer, 503 the
// upstream unavailable, 504 its time limit, the upstream's own refusals
// as the matching client errors.
func forwardError(err error) *Error {
	if ue, ok := errors.AsType[*engine.UpstreamError](err); ok {
		switch ue.Status {
		case http.StatusBadRequest:
			return &Error{Status: http.StatusBadRequest, Code: CodeInvalidStatement, Message: "the upstream query service refused the statement", cause: err}
		case http.StatusUnauthorized, http.StatusForbidden:
			return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: "the upstream query service refused the request", cause: err}
		case http.StatusNotFound:
			return &Error{Status: http.StatusNotFound, Code: CodeUnknownTable, Message: "the upstream query service does not know the table", cause: err}
		case http.StatusConflict:
			return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: "the write conflicts with the data", cause: err}
		case http.StatusTooManyRequests:
			return &Error{Status: http.StatusTooManyRequests, Code: CodeTooManyRequests, Message: "the upstream query service is over its rate", cause: err}
		}
		return &Error{Status: http.StatusBadGateway, Code: CodeBadGateway, Message: "the upstream query service failed", cause: err}
	}
	if errors.Is(err, engine.ErrBadGateway) {
		return &Error{Status: http.StatusBadGateway, Code: CodeBadGateway, Message: "the upstream query service failed", cause: err}
	}
	return engineError(err)
}

// resolveError maps an error of sqlgen.Resolve: an unknown (or hidden) name as
// sqlgen reports it (404), anything else a statement that cannot be forwarded.
func resolveError(err error) *Error {
	if _, ok := errors.AsType[*sqlgen.UnknownError](err); ok {
		return generateError(err)
	}
	return errInvalid("this statement cannot be forwarded")
}

// catalogueInMemory serves CatalogueTable for a Forwarder, from its
// configured catalog and the policy: a select list of Name and IsSystem,
// no WHERE, ORDER BY or LIMIT (there is no SQL engine to run them).
func (h *Handler) catalogueInMemory(w http.ResponseWriter, r *http.Request, req *request, sel *iql.Select) {
	if sel.Where != nil || len(sel.OrderBy) > 0 || sel.Limit != nil {
		h.fail(w, req, &Error{Status: http.StatusBadRequest, Code: CodeInvalidStatement,
			Message: CatalogueTable + " takes no WHERE, ORDER BY or LIMIT on this service"})
		return
	}
	cat, err := h.cfg.Forwarder.Catalog(r.Context())
	if err != nil {
		h.fail(w, req, forwardError(err))
		return
	}
	table := sqlgen.Table{Name: CatalogueTable, Columns: []sqlgen.Column{{Name: "Name", Type: sqlgen.String}, {Name: "IsSystem", Type: sqlgen.Boolean}}}
	_, cols, err := sqlgen.Resolve(table, sel)
	if err != nil {
		h.fail(w, req, resolveError(err))
		return
	}
	var rows [][]any
	for _, n := range append(h.policy.readable(cat, req.caller), CatalogueTable) {
		row := make([]any, len(cols))
		for i, c := range cols {
			if c.Name == "Name" {
				row[i] = n
			} else {
				row[i] = n == CatalogueTable
			}
		}
		rows = append(rows, row)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if _, err := WriteResult(w, &memRows{cols: cols, rows: rows, i: -1}, ResultOptions{MaxRows: h.cfg.MaxRows}); err != nil {
		w.Header().Del("Content-Type")
		h.fail(w, req, engineError(err))
		return
	}
	req.rows = int64(len(rows))
	h.done(req, "ok")
}

// memRows is a result held in memory.
type memRows struct {
	cols []sqlgen.Column
	rows [][]any
	i    int
}

func (m *memRows) Columns() []sqlgen.Column { return m.cols }
func (m *memRows) Next() bool               { m.i++; return m.i < len(m.rows) }
func (m *memRows) Values() []any            { return m.rows[m.i] }
func (m *memRows) Err() error               { return nil }
func (m *memRows) Close() error             { return nil }
