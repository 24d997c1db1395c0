package queryproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// serve authorizes stmt, generates its SQL and runs it: a select streams
// its rows, a write answers {"RowsAffected": n} and is audited.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, req *request, stmt iql.Statement) {
	if h.cfg.Forwarder != nil {
		if sel, ok := stmt.(*iql.Select); ok && sqlgen.EqualFold(sel.Table, CatalogueTable) {
			req.table = CatalogueTable
			h.catalogueInMemory(w, r, req, sel)
			return
		}
		h.forward(w, r, req, stmt)
		return
	}
	ctx := r.Context()
	req.step(spanAuthorize)
	cat, err := h.cfg.Engine.Catalog(ctx)
	if err != nil {
		h.fail(w, req, engineError(err))
		return
	}
	if sel, ok := stmt.(*iql.Select); ok && sqlgen.EqualFold(sel.Table, CatalogueTable) {
		req.table = CatalogueTable
		h.catalogue(w, r, req, cat, sel)
		return
	}
	pl, e := h.policy.authorize(cat, req.caller, stmt, nil)
	if pl != nil {
		req.planned(pl)
	} else if t, ok := cat.Table(stmt.TableName()); ok {
		if _, named := h.policy.table(t.Name); named {
			req.table = t.Name
		}
	}
	if e != nil {
		h.fail(w, req, e)
		return
	}
	if !pl.write {
		pl.opts.MaxRows = h.cfg.MaxRows
	}
	opts := pl.opts
	opts.RowCheck = h.rowCheck
	st, err := sqlgen.Generate(h.cfg.Engine.Dialect(), pl.catalog, pl.stmt, opts)
	if err != nil {
		h.fail(w, req, generateError(err))
		return
	}
	if pl.write {
		h.write(w, r, req, pl.stmt, st)
		return
	}
	h.read(w, r, req, st)
}

// read runs a select and streams its result.
func (h *Handler) read(w http.ResponseWriter, r *http.Request, req *request, st sqlgen.Statement) {
	req.step(spanEngine)
	rows, err := h.cfg.Engine.Query(r.Context(), st)
	if err != nil {
		h.fail(w, req, engineError(err))
		return
	}
	defer rows.Close()
	h.stream(w, req, typedRows{rows, st.Columns}, engineError)
}

// stream writes rows as the result (WriteResult); a failure before
// anything was sent is answered as errorOf maps it, one after is logged.
func (h *Handler) stream(w http.ResponseWriter, req *request, rows engine.Rows, errorOf func(error) *Error) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	sum, err := WriteResult(w, rows, ResultOptions{MaxRows: h.cfg.MaxRows, BufferSize: h.cfg.ResultBufferSize})
	if err != nil {
		if se, ok := errors.AsType[*StreamError](err); ok {
			// The body is cut short and the trailer carries the code.
			req.failed, req.rows = true, int64(sum.Rows)
			h.done(req, se.Code)
			h.log.Warn("query result cut short", zap.String("request_id", req.id), zap.String("table", req.table),
				zap.String("code", se.Code), zap.Int("rows_sent", sum.Rows), zap.Error(se.Err))
			return
		}
		w.Header().Del("Content-Type")
		h.fail(w, req, errorOf(err))
		return
	}
	req.rows = int64(sum.Rows)
	h.done(req, "ok")
}

// write runs an insert, update or delete in one transaction, answers the
// rows affected, and writes an audit entry (who, table, kind, count;
// never a value) whatever the outcome.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, req *request, stmt iql.Statement, st sqlgen.Statement) {
	kind := kindOf(stmt)
	req.step(spanEngine)
	n, err := h.cfg.Engine.Exec(r.Context(), []sqlgen.Statement{st})
	outcome := "ok"
	var e *Error
	if err != nil {
		e = engineError(err)
		outcome = e.Code
	}
	h.log.Info("query write", zap.String("request_id", req.id), zap.String("user", req.caller.Subject),
		zap.String("client_id", req.caller.ClientID), zap.String("table", req.table), zap.String("kind", kind),
		zap.Int64("rows_affected", n), zap.String("outcome", outcome))
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

// catalogue serves CatalogueTable: the tables the caller may read (Name,
// IsSystem false) and CatalogueTable itself (IsSystem true), through the
// engine as a VALUES list, so WHERE, ORDER BY and LIMIT mean what they
// mean on any table. Only selects: it cannot be written.
func (h *Handler) catalogue(w http.ResponseWriter, r *http.Request, req *request, cat sqlgen.Catalog, sel *iql.Select) {
	names := append(h.policy.readable(cat, req.caller), CatalogueTable)
	table := sqlgen.Table{Name: CatalogueTable, Columns: []sqlgen.Column{{Name: "Name", Type: sqlgen.String}, {Name: "IsSystem", Type: sqlgen.Boolean}}}
	d := h.cfg.Engine.Dialect()
	st, err := sqlgen.Generate(d, sqlgen.Catalog{Tables: []sqlgen.Table{table}}, sel, sqlgen.Options{MaxRows: h.cfg.MaxRows, RowCheck: h.rowCheck})
	if err != nil {
		h.fail(w, req, generateError(err))
		return
	}
	st, err = withValues(d, table, names, st)
	if err != nil {
		h.fail(w, req, &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error", cause: err})
		return
	}
	h.read(w, r, req, st)
}

// withValues puts a common table expression holding the catalogue rows
// in front of st. Its values are bind arguments too: SQLite numbers ?
// by position (the CTE's come first), PostgreSQL by index (the CTE's
// follow st's own).
func withValues(d sqlgen.Dialect, t sqlgen.Table, names []string, st sqlgen.Statement) (sqlgen.Statement, error) {
	var b []byte
	b = append(b, `WITH "`+t.Name+`"("Name", "IsSystem") AS (VALUES `...)
	var args []any
	for i, n := range names {
		if i > 0 {
			b = append(b, ", "...)
		}
		system := n == CatalogueTable
		switch d {
		case sqlgen.SQLite:
			b = append(b, "(?, ?)"...)
			args = append(args, n, map[bool]int64{false: 0, true: 1}[system])
		case sqlgen.PostgreSQL:
			k := len(st.Args) + len(args)
			b = fmt.Appendf(b, "($%d::text, $%d::boolean)", k+1, k+2)
			args = append(args, n, system)
		default:
			return st, fmt.Errorf("catalogue: unknown dialect %q", d)
		}
	}
	b = append(b, ") "...)
	out := sqlgen.Statement{SQL: string(b) + st.SQL, Columns: st.Columns}
	if d == sqlgen.SQLite {
		out.Args = append(args, st.Args...)
	} else {
		out.Args = append(st.Args, args...)
	}
	return out, nil
}

// typedRows reports the columns sqlgen resolved (catalog spelling and
// type) and gives Boolean columns bool values whatever the engine made
// of a computed column.
type typedRows struct {
	engine.Rows
	cols []sqlgen.Column
}

func (t typedRows) Columns() []sqlgen.Column {
	if len(t.cols) == 0 {
		return t.Rows.Columns()
	}
	return t.cols
}

func (t typedRows) Values() []any {
	v := t.Rows.Values()
	for i, c := range t.cols {
		if c.Type == sqlgen.Boolean && i < len(v) {
			if n, ok := v[i].(int64); ok {
				v[i] = n != 0
			}
		}
	}
	return v
}

// fail answers a request with e as {"Error": {"Code", "Message",
// "RequestId"}}, counts it, and logs its cause when it is the service's
// own fault.
func (h *Handler) fail(w http.ResponseWriter, req *request, e *Error) {
	req.failed, req.status = e.Status >= 500, e.Status
	req.endStep(e)
	h.done(req, e.Code)
	if e.Status >= 500 {
		// Error for a fault of ours; the database's or the upstream's
		// failures (unavailable, its time limit, a bad answer) are Warn:
		// nothing here to mend, and a hostile upstream cannot flood the
		// error log.
		level := zap.WarnLevel
		if e.Code == CodeInternal {
			level = zap.ErrorLevel
		}
		h.log.Log(level, "query failed", zap.String("request_id", req.id), zap.String("endpoint", req.endpoint),
			zap.String("table", req.table), zap.String("code", e.Code), zap.Error(e.cause))
	} else if e.cause != nil {
		h.log.Debug("query refused", zap.String("request_id", req.id), zap.String("endpoint", req.endpoint),
			zap.String("code", e.Code), zap.Error(e.cause))
	}
	body, _ := json.Marshal(errorBody{Error: errorDetail{Code: e.Code, Message: e.Message, RequestID: req.id}})
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json; charset=utf-8")
	hdr.Set("Cache-Control", "no-store")
	status := e.Status
	if status == 499 { // nobody reads it; a real status for the log
		status = http.StatusServiceUnavailable
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

type errorBody struct {
	Error errorDetail `json:"Error"`
}

type errorDetail struct {
	Code      string `json:"Code"`
	Message   string `json:"Message"`
	RequestID string `json:"RequestId"`
}
