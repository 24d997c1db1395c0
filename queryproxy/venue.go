package queryproxy

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// DefaultFeed is the feed of a table with a venue column that names none
// (docs/entitlements.md): per-symbol top of book.
const DefaultFeed = "quotes"

// withVenues returns a copy of tables with each venue table's Venues
// defaulted to venues.
func withVenues(tables []TablePolicy, venues []string) []TablePolicy {
	out := slices.Clone(tables)
	for i := range out {
		if out[i].VenueColumn != "" && len(out[i].Venues) == 0 {
			out[i].Venues = venues
		}
	}
	return out
}

// validateVenues checks a table's venue column, feed and venues.
func (t *TablePolicy) validateVenues() []error {
	var errs []error
	if t.VenueColumn == "" {
		if t.Feed != "" || len(t.Venues) > 0 {
			errs = append(errs, fmt.Errorf("table %q: a feed or venues without a venue column", t.Table))
		}
		return errs
	}
	if !iql.ValidIdent(t.VenueColumn) {
		errs = append(errs, fmt.Errorf("table %q: venue column %q is not an identifier", t.Table, t.VenueColumn))
	}
	if t.Feed != "" && !entitle.ValidFeed(t.Feed) {
		errs = append(errs, fmt.Errorf("table %q: feed %q is not a feed (a lower-case word)", t.Table, t.Feed))
	}
	if len(t.Venues) == 0 {
		errs = append(errs, fmt.Errorf("table %q: a venue column needs the venues of its feed (venues, on the table or the handler): a caller who holds them all sees the rows whose venue is NULL", t.Table))
	}
	errs = append(errs, validVenues(fmt.Sprintf("table %q", t.Table), t.Venues)...)
	if sqlgen.EqualFold(t.VenueColumn, t.Owner) {
		errs = append(errs, fmt.Errorf("table %q: column %q cannot be both the owner and the venue column", t.Table, t.VenueColumn))
	}
	if slices.ContainsFunc(t.Hidden, func(h string) bool { return sqlgen.EqualFold(h, t.VenueColumn) }) {
		errs = append(errs, fmt.Errorf("table %q: the venue column %q cannot be hidden", t.Table, t.VenueColumn))
	}
	return errs
}

// validVenues checks a list of venues (as the backend spells them:
// upper-case letters and digits).
func validVenues(where string, venues []string) []error {
	var errs []error
	for _, v := range venues {
		if !entitle.ValidVenue(v) {
			errs = append(errs, fmt.Errorf("%s: venue %q is not a venue (upper-case letters and digits, at most %d)", where, v, entitle.MaxVenueLen))
		}
	}
	return errs
}

// checkVenueColumn reports a venue column the table lacks or that is not
// text.
func (t *TablePolicy) checkVenueColumn(tb sqlgen.Table) error {
	if t.VenueColumn == "" {
		return nil
	}
	c, ok := tb.Column(t.VenueColumn)
	switch {
	case !ok:
		return fmt.Errorf("table %q: venue column %q not in the table, or ambiguous (several columns have that name but for case)", t.Table, t.VenueColumn)
	case c.Type != sqlgen.String || (c.Text != sqlgen.TextType && c.Text != sqlgen.TextCast):
		return fmt.Errorf("table %q: venue column %q is not a text column", t.Table, t.VenueColumn)
	}
	return nil
}

// venueOf is what the caller sees of a venue table: the venues it holds
// for the table's feed, and the rows whose venue is NULL when it holds
// every venue of the feed.
func (t *TablePolicy) venueOf(c *Caller) sqlgen.Venue {
	return sqlgen.Venue{Column: t.VenueColumn, Held: c.Entitlements.Venues(t.Feed),
		Null: c.Entitlements.HasAll(t.Venues, t.Feed)}
}

// checkVenueWrite refuses (403) an insert or a SET that writes a venue the
// caller does not hold for the table's feed: a value that is not exactly
// such a venue ("asx", "ASX " and a number are none), or NULL (or an insert
// that leaves the column to the database) when it does not hold them all.
func (t *TablePolicy) checkVenueWrite(stmt iql.Statement, c *Caller, v sqlgen.Venue) *Error {
	check := func(l iql.Literal) *Error {
		switch {
		case l.Kind == iql.KindString && c.Entitlements.Has(l.Text, t.Feed):
			return nil
		case l.Kind == iql.KindNull && v.Null:
			return nil
		case l.Kind == iql.KindNull:
			return errForbidden(fmt.Sprintf("column %s: a row without a venue is seen only by who holds every venue of the feed %s", t.VenueColumn, t.Feed))
		}
		return errForbidden(fmt.Sprintf("column %s: the access token does not hold venue %q for the feed %s", t.VenueColumn, truncate(l.Text, 32), t.Feed))
	}
	isVenue := func(col string) bool { return sqlgen.EqualFold(col, t.VenueColumn) }
	switch s := stmt.(type) {
	case *iql.Insert:
		i := slices.IndexFunc(s.Columns, isVenue)
		if i < 0 {
			if v.Null {
				return nil
			}
			return errForbidden(fmt.Sprintf("an insert into table %s names the venue column %s, with a venue the access token holds", t.Table, t.VenueColumn))
		}
		for _, row := range s.Rows {
			if e := check(row[i]); e != nil {
				return e
			}
		}
	case *iql.Update:
		for _, a := range s.Set {
			if isVenue(a.Column) {
				if e := check(a.Value); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

// forwardVenue adds the venue filter to stmt for a Forwarder, whose
// upstream takes the statements its grammar check (forwardCheck) passes:
// the exact filter, or for a caller who also sees NULL venues, when that
// one does not pass, the filter without them (it shows less, never more).
// A filter the grammar cannot take is 403; empty reports that the caller
// sees no row at all (no venue held), which IQL cannot write.
func forwardVenue(tb sqlgen.Table, stmt iql.Statement, v sqlgen.Venue, forwardCheck func(iql.Statement) string) (out iql.Statement, empty bool, e *Error) {
	filtered, err := sqlgen.FilterVenue(tb, stmt, v)
	if errors.Is(err, sqlgen.ErrNoVenue) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, generateError(err)
	}
	what := forwardCheck(filtered)
	if what != "" && v.Null && len(v.Held) > 0 {
		v.Null = false
		if narrower, err := sqlgen.FilterVenue(tb, stmt, v); err == nil && forwardCheck(narrower) == "" {
			return narrower, false, nil
		}
	}
	if what != "" {
		return nil, false, errForbidden(fmt.Sprintf("table %s shows only the rows of the venues the access token holds, and this service's upstream cannot add that filter to this statement (%s is not in its language): write the condition with AND alone", tb.Name, what))
	}
	return filtered, false, nil
}
