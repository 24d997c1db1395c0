package queryproxy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// CatalogueTable is the table that lists the tables a caller may read
// (docs/protocol.md, "Query service"): columns Name (String) and
// IsSystem (Boolean). The gateway serves it from the engine's catalog and
// the policy; it is never a table of the engine.
const CatalogueTable = "CatalogueTable"

// DefaultOwnerClaim is the token claim an owner column is bound to when a
// TablePolicy names none.
const DefaultOwnerClaim = "sub"

// TablePolicy says who may read and write one table. A table no
// TablePolicy names is invisible: a statement naming it gets 404, as one
// naming a table that does not exist.
type TablePolicy struct {
	// Table is the table's name, matched against the engine's catalog
	// ignoring ASCII case. Required.
	Table string `json:"table"`
	// Read are the scopes that may read the table: a caller holding any
	// one of them may. None: nobody reads it (a write-only table).
	Read []string `json:"read,omitempty"`
	// Write are the scopes that may write it (INSERT, and UPDATE and
	// DELETE with a WHERE clause): a caller needs one of them and read
	// access too (a WHERE reads). None: read-only.
	Write []string `json:"write,omitempty"`
	// Owner is the column holding each row's owner, for per-user tables:
	// reads, updates and deletes see only the caller's rows, and inserts
	// get the caller as owner. Empty: rows are shared. Refused with a
	// forwarding engine (iq), whose upstream filters by the token itself.
	Owner string `json:"owner,omitempty"`
	// OwnerClaim is the access-token claim an owner column holds. Default
	// DefaultOwnerClaim ("sub", the user's fixed id).
	OwnerClaim string `json:"owner_claim,omitempty"`
	// Hidden columns can be neither selected nor named in WHERE, ORDER BY,
	// SET or an insert (a filter on a hidden column would leak its
	// values); to the caller they do not exist. The owner column cannot be
	// hidden (it is how a caller's own rows are found).
	Hidden []string `json:"hidden,omitempty"`
	// ReadOnly columns can be read and filtered on but not written (SET, an
	// insert): the database assigns them. A per-user table's key belongs
	// here when other users' rows share its values: writing a value
	// another user's row holds answers 409, which would tell a caller the
	// keys of rows it cannot see. (A key the database assigns in sequence
	// still tells, by the gap between two of a caller's own rows, how many
	// rows others made meanwhile: a table that must hide that needs keys
	// that are not sequential.)
	ReadOnly []string `json:"read_only,omitempty"`
	// VenueColumn is the column that names each row's venue, for a table
	// of market data licensed per venue (docs/entitlements.md): a caller
	// reads, updates and deletes only the rows of the venues its access
	// token holds for the table's Feed, as it sees only its own rows of a
	// per-user table, and writes (an insert, a SET) only those venues
	// (403 otherwise); a row whose venue is NULL is seen only by a caller
	// who holds every one of Venues. The column must be text and cannot be
	// hidden. Empty: rows are not filtered by venue. With a forwarding
	// engine (iq) the filter is added to the statement where the
	// upstream's language can hold it; otherwise the statement is refused.
	VenueColumn string `json:"venue_column,omitempty"`
	// Feed is the feed of the table's data, whose venues a caller must
	// hold ("quotes", "depth", a news source's "news"). Default "quotes"
	// (DefaultFeed). Only with VenueColumn.
	Feed string `json:"feed,omitempty"`
	// Venues are the venues of the table's feed that the deployment
	// knows, as the backend spells them (ASX): a caller who holds every
	// one of them also sees the rows whose venue is NULL. Default the
	// handler's Config.Venues; a venue table needs one or the other. Risk:
	// a list that leaves out a venue shows the rows without a venue to
	// callers who do not hold it. Only with VenueColumn.
	Venues []string `json:"venues,omitempty"`
}

// Caller is who a request speaks for: the verified access token.
type Caller struct {
	Subject  string
	ClientID string
	Scopes   []string
	// Claim returns a string claim of the token (e.g. "sub"); false when
	// the token has none or it is not a string. nil: only "sub" (Subject).
	Claim func(name string) (string, bool)
	// Token is the access token itself, for a Forwarder, whose upstream
	// knows the user from it. Never logged.
	Token string
	// Entitlements are the market-data pairs the token holds: the venues
	// whose rows of a venue table (TablePolicy.VenueColumn) the caller
	// sees. Empty: none.
	Entitlements entitle.Set
}

func (c *Caller) claim(name string) (string, bool) {
	if c.Claim != nil {
		return c.Claim(name)
	}
	if name == "sub" && c.Subject != "" {
		return c.Subject, true
	}
	return "", false
}

func (c *Caller) holdsAny(scopes []string) bool {
	return slices.ContainsFunc(scopes, func(s string) bool { return slices.Contains(c.Scopes, s) })
}

// Policy is the compiled table policy. Safe for concurrent use.
type Policy struct {
	tables []TablePolicy
}

// ValidatePolicy checks table policies without compiling them.
func ValidatePolicy(tables []TablePolicy) error {
	var errs []error
	for i, t := range tables {
		switch {
		case !iql.ValidIdent(t.Table):
			errs = append(errs, fmt.Errorf("table policy %d: table %q is not an identifier", i, t.Table))
			continue
		case sqlgen.EqualFold(t.Table, CatalogueTable):
			errs = append(errs, fmt.Errorf("table policy %d: %s is the gateway's own table", i, CatalogueTable))
		case len(t.Read) == 0 && len(t.Write) == 0:
			errs = append(errs, fmt.Errorf("table %q: no read or write scopes (leave it out to hide it)", t.Table))
		case len(t.Write) > 0 && len(t.Read) == 0:
			errs = append(errs, fmt.Errorf("table %q: writes need read access too: name read scopes", t.Table))
		}
		for j := range i {
			if sqlgen.EqualFold(tables[j].Table, t.Table) {
				errs = append(errs, fmt.Errorf("table %q: named twice (policies %d and %d)", t.Table, j, i))
			}
		}
		for _, s := range append(slices.Clone(t.Read), t.Write...) {
			if s == "" || strings.ContainsAny(s, " \t\"\\") {
				errs = append(errs, fmt.Errorf("table %q: bad scope %q", t.Table, s))
			}
		}
		if t.Owner != "" && !iql.ValidIdent(t.Owner) {
			errs = append(errs, fmt.Errorf("table %q: owner column %q is not an identifier", t.Table, t.Owner))
		}
		if t.OwnerClaim != "" && t.Owner == "" {
			errs = append(errs, fmt.Errorf("table %q: owner_claim without an owner column", t.Table))
		}
		for _, r := range t.ReadOnly {
			if !iql.ValidIdent(r) {
				errs = append(errs, fmt.Errorf("table %q: read-only column %q is not an identifier", t.Table, r))
			}
			if slices.ContainsFunc(t.Hidden, func(h string) bool { return sqlgen.EqualFold(h, r) }) {
				errs = append(errs, fmt.Errorf("table %q: column %q is both hidden and read-only (a hidden column does not exist to the caller)", t.Table, r))
			}
		}
		errs = append(errs, t.validateVenues()...)
		for _, h := range t.Hidden {
			if !iql.ValidIdent(h) {
				errs = append(errs, fmt.Errorf("table %q: hidden column %q is not an identifier", t.Table, h))
			}
			if t.Owner != "" && sqlgen.EqualFold(h, t.Owner) {
				errs = append(errs, fmt.Errorf("table %q: the owner column %q cannot be hidden", t.Table, h))
			}
		}
	}
	return errors.Join(errs...)
}

// NewPolicy compiles table policies.
func NewPolicy(tables []TablePolicy) (*Policy, error) {
	if err := ValidatePolicy(tables); err != nil {
		return nil, err
	}
	p := &Policy{tables: slices.Clone(tables)}
	for i := range p.tables {
		if p.tables[i].Owner != "" && p.tables[i].OwnerClaim == "" {
			p.tables[i].OwnerClaim = DefaultOwnerClaim
		}
		if p.tables[i].VenueColumn != "" && p.tables[i].Feed == "" {
			p.tables[i].Feed = DefaultFeed
		}
	}
	return p, nil
}

func (p *Policy) table(name string) (*TablePolicy, bool) {
	for i := range p.tables {
		if sqlgen.EqualFold(p.tables[i].Table, name) {
			return &p.tables[i], true
		}
	}
	return nil, false
}

// CheckCatalog reports the policies whose table, owner column, venue
// column, hidden or read-only columns the engine's catalog lacks (or whose
// venue column is not text): a configuration error, found at
// start rather than on the first request.
func (p *Policy) CheckCatalog(cat sqlgen.Catalog) error {
	var errs []error
	for _, tp := range p.tables {
		t, ok := cat.Table(tp.Table)
		if !ok {
			errs = append(errs, fmt.Errorf("table %q: not in the database, or several tables have that name but for case and none exactly it", tp.Table))
			continue
		}
		if tp.Owner != "" {
			if _, ok := t.Column(tp.Owner); !ok {
				errs = append(errs, fmt.Errorf("table %q: owner column %q not in the table, or ambiguous (several columns have that name but for case)", tp.Table, tp.Owner))
			}
		}
		if err := tp.checkVenueColumn(t); err != nil {
			errs = append(errs, err)
		}
		for _, h := range tp.Hidden {
			if _, ok := t.Column(h); !ok {
				errs = append(errs, fmt.Errorf("table %q: hidden column %q not in the table, or ambiguous (several columns have that name but for case)", tp.Table, h))
			}
		}
		for _, r := range tp.ReadOnly {
			if _, ok := t.Column(r); !ok {
				errs = append(errs, fmt.Errorf("table %q: read-only column %q not in the table, or ambiguous (several columns have that name but for case)", tp.Table, r))
			}
		}
	}
	return errors.Join(errs...)
}

// readable lists the tables of cat the caller may read, in catalog order.
func (p *Policy) readable(cat sqlgen.Catalog, c *Caller) []string {
	var names []string
	for _, t := range cat.Tables {
		tp, ok := p.table(t.Name)
		if !ok || !c.holdsAny(tp.Read) {
			continue
		}
		// Only the table the policy means (authorize): not another whose
		// name differs from it in case alone.
		if rt, ok := cat.Table(tp.Table); ok && rt.Name == t.Name {
			names = append(names, t.Name)
		}
	}
	return names
}

// plan is what the policy makes of one statement: the statement to run
// (the caller's, or a copy of an insert without the owner column), the
// catalog sqlgen resolves names against (the one table, without hidden
// columns) and the owner and venue filters.
type plan struct {
	table   string // as the catalog spells it
	stmt    iql.Statement
	catalog sqlgen.Catalog
	opts    sqlgen.Options
	write   bool
	// empty is set, for a Forwarder, when the caller sees no row of the
	// table (a venue table, no venue held): the answer is empty without
	// asking the upstream.
	empty bool
	// venues and feed are, for a venue table, the venues of the feed whose
	// rows the caller's filter allows (for the audit).
	venues []string
	feed   string
}

// authorize checks that the caller may run stmt on cat, and returns the
// plan. Unknown and invisible tables are 404; a table the caller's scopes
// do not open is 403 (the table names are the platform's published
// catalogue: no secret); hidden columns are unknown columns (404, as
// sqlgen reports them). With an SQL engine (forwardCheck nil), a per-user
// table gets the owner filter, and an insert naming the owner column with
// the caller's own value is planned without it (sqlgen adds it); another
// value is 403. A Forwarder's upstream does that itself. A venue table
// refuses (403) an insert or SET of a venue the caller does not hold, and
// gets the venue filter: as sqlgen's option with an SQL engine, in the
// plan's statement with a Forwarder (forwardCheck is its grammar check;
// forwardVenue). authorize changes none of its arguments: the plan's
// statement is a copy where it differs.
func (p *Policy) authorize(cat sqlgen.Catalog, c *Caller, stmt iql.Statement, forwardCheck func(iql.Statement) string) (*plan, *Error) {
	ownerRewrite := forwardCheck == nil
	name := stmt.TableName()
	tp, named := p.table(name)
	if !named {
		return nil, errUnknownTable(name)
	}
	// The table is the one the policy names, as it spells it: a schema
	// may hold tables whose names differ in case alone (PostgreSQL), and
	// the one the caller's spelling would find first is not the policy's.
	t, exists := cat.Table(tp.Table)
	if !exists {
		return nil, errUnknownTable(name)
	}
	_, write := stmt.(*iql.Select)
	write = !write
	switch {
	case !c.holdsAny(tp.Read):
		return nil, errForbidden(fmt.Sprintf("reading table %s needs one of the scopes %s", t.Name, strings.Join(tp.Read, ", ")))
	case write && len(tp.Write) == 0:
		return nil, errForbidden(fmt.Sprintf("table %s is read-only", t.Name))
	case write && !c.holdsAny(tp.Write):
		return nil, errForbidden(fmt.Sprintf("writing table %s needs one of the scopes %s", t.Name, strings.Join(tp.Write, ", ")))
	}
	if write {
		if e := tp.checkReadOnly(stmt, t); e != nil {
			return nil, e
		}
	}
	visible := t
	if len(tp.Hidden) > 0 {
		visible = sqlgen.Table{Name: t.Name}
		for _, col := range t.Columns {
			if !slices.ContainsFunc(tp.Hidden, func(h string) bool { return sqlgen.EqualFold(h, col.Name) }) {
				visible.Columns = append(visible.Columns, col)
			}
		}
	}
	pl := &plan{table: t.Name, stmt: stmt, catalog: sqlgen.Catalog{Tables: []sqlgen.Table{visible}}, write: write}
	if tp.Owner != "" && ownerRewrite {
		owner, ok := c.claim(tp.OwnerClaim)
		if !ok || owner == "" {
			return nil, errForbidden(fmt.Sprintf("table %s holds per-user rows; the access token has no %s claim", t.Name, tp.OwnerClaim))
		}
		pl.opts.Owner = &sqlgen.Owner{Column: tp.Owner, Value: owner}
		if ins, ok := stmt.(*iql.Insert); ok {
			own, e := withoutOwnColumn(ins, tp.Owner, owner)
			if e != nil {
				return nil, e
			}
			pl.stmt = own
		}
	}
	if tp.VenueColumn != "" {
		v := tp.venueOf(c)
		pl.venues, pl.feed = slices.Clone(v.Held), tp.Feed
		if write {
			if e := tp.checkVenueWrite(stmt, c, v); e != nil {
				return nil, e
			}
		}
		if forwardCheck == nil {
			pl.opts.Venue = &v
			return pl, nil
		}
		var e *Error
		if pl.stmt, pl.empty, e = forwardVenue(visible, pl.stmt, v, forwardCheck); e != nil {
			return nil, e
		}
	}
	return pl, nil
}

// checkReadOnly refuses (403) a write that names a ReadOnly column: in
// SET, or an insert's columns.
func (tp *TablePolicy) checkReadOnly(stmt iql.Statement, t sqlgen.Table) *Error {
	var cols []string
	switch s := stmt.(type) {
	case *iql.Update:
		for _, a := range s.Set {
			cols = append(cols, a.Column)
		}
	case *iql.Insert:
		cols = s.Columns
	}
	for _, c := range cols {
		if slices.ContainsFunc(tp.ReadOnly, func(r string) bool { return sqlgen.EqualFold(r, c) }) {
			return errForbidden(fmt.Sprintf("column %s is read-only: the database assigns it", c))
		}
		if col, ok := t.Column(c); ok && col.Generated {
			return errForbidden(fmt.Sprintf("column %s is read-only: the database computes it", c))
		}
	}
	return nil
}

// withoutOwnColumn returns ins without the owner column (a copy; ins itself
// when it does not name the column) when its every row gives the caller's
// own value; a row with another owner is 403.
func withoutOwnColumn(ins *iql.Insert, column, owner string) (*iql.Insert, *Error) {
	i := slices.IndexFunc(ins.Columns, func(c string) bool { return sqlgen.EqualFold(c, column) })
	if i < 0 {
		return ins, nil
	}
	for _, row := range ins.Rows {
		if v := row[i]; v.Kind != iql.KindString || v.Text != owner {
			return nil, errForbidden(fmt.Sprintf("column %s is the row's owner: it is filled in from the access token and cannot name another", column))
		}
	}
	out := &iql.Insert{Table: ins.Table, Columns: slices.Delete(slices.Clone(ins.Columns), i, i+1), Rows: make([][]iql.Literal, len(ins.Rows))}
	for r, row := range ins.Rows {
		out.Rows[r] = slices.Delete(slices.Clone(row), i, i+1)
	}
	return out, nil
}
