package queryproxy_test

// A market-data table whose rows name their venue: a caller sees, updates and deletes the
// rows of the venues its token holds for the table's feed, and writes no other venue.

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/iqengine"
	"github.com/gatehouse/gatehouse/queryproxy/sqliteengine"
)

// quoteSchema is a venue table holding a row of each known venue, one of a venue the
// deployment does not list (LSE), one without a venue, and rows whose venue is a
// case variant, a look-alike or has a trailing space: each of these last is no venue
// anyone holds.
const quoteSchema = `
CREATE TABLE Quote (Id INTEGER PRIMARY KEY, Code TEXT NOT NULL, Venue TEXT, Price REAL);
INSERT INTO Quote (Id, Code, Venue, Price) VALUES
	(1, 'BHP', 'ASX', 1), (2, 'AIR', 'NZX', 2), (3, 'RIO', 'LSE', 3), (4, 'NUL', NULL, 4),
	(5, 'LOW', 'asx', 5), (6, 'SPC', 'ASX ', 6), (7, 'UNI', 'ＡSX', 7);`

// venueCallers are the tokens of the venue tests, by the pairs they hold.
var venueCallers = map[string]entitle.Set{
	"none":  {},
	"asx":   entitle.MustParse("ASX:quotes"),
	"nzx":   entitle.MustParse("NZX:quotes NZX:depth"),
	"both":  entitle.MustParse("ASX:quotes NZX:quotes"),
	"depth": entitle.MustParse("ASX:depth NZX:depth"),
}

// venueSees is what each caller must see of Quote.
var venueSees = map[string][]string{
	"none": nil, "depth": nil, "asx": {"BHP"}, "nzx": {"AIR"}, "both": {"AIR", "BHP", "NUL"},
}

// venueService is the demo's service plus Quote, filtered by Venue (feed quotes by
// default, venues ASX and NZX from the handler's list), writable by venueCallers.
func venueService(t *testing.T) *testService { return venueServiceWith(t, nil) }

// venueServiceWith is venueService, its config changed by mod.
func venueServiceWith(t *testing.T, mod func(*queryproxy.Config)) *testService {
	t.Helper()
	quote := queryproxy.TablePolicy{Table: "Quote", Read: []string{"m"}, Write: []string{"m"}, VenueColumn: "Venue"}
	return serviceWithTables(t, sqliteengine.Config{MaxReadConns: 8}, quoteSchema, []queryproxy.TablePolicy{quote}, func(c *queryproxy.Config) {
		c.Venues = []string{"ASX", "NZX"}
		c.Authenticate = venueAuthenticate
		c.MaxConcurrentPerUser, c.MaxUserShare = 8, 100 // a burst of 4 per user at once
		if mod != nil {
			mod(c)
		}
	})
}

func venueAuthenticate(w http.ResponseWriter, r *http.Request) (*queryproxy.Caller, bool) {
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	ents, ok := venueCallers[tok]
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		return nil, false
	}
	return &queryproxy.Caller{Subject: tok, ClientID: "c", Scopes: []string{"m"}, Entitlements: ents, Token: tok}, true
}

// codesOf is the sorted Code column of a 200 result; false for another answer.
func codesOf(r *response) ([]string, bool) {
	c, ok := r.result.Columns["Code"]
	if r.status != 200 || !ok {
		return nil, false
	}
	var out []string
	for _, row := range r.result.Rows {
		out = append(out, toString(row[c.Index]))
	}
	slices.Sort(out)
	return out, true
}

// TestVenueRowsInvisible: each caller sees the rows of the venues it holds for the feed
// quotes, the rows without a venue only when it holds both known venues, and no row of
// an unlisted venue, a case variant, a look-alike or a venue with a trailing space,
// whatever its condition tries (an OR, a NOT, naming the other venues): through IQL and
// the structured select, in a parallel burst. It failed when the plan left out the
// filter, and when a caller holding ASX alone was let see the rows without a venue.
func TestVenueRowsInvisible(t *testing.T) {
	s := venueService(t)
	// Each condition holds for every row (Price > 0): what it tries to widen is the filter.
	wheres := []string{"", ` where Venue = 'NZX' or Venue is null or Code = 'BHP' or Price > 0`,
		` where not (Venue = 'ASX') or Venue is not null or Price > 0`,
		` where Venue in ['asx', 'ASX ', 'ＡSX', 'LSE', 'NZX', 'ASX'] or Venue is null or Price > 0`}
	criteria := []string{``, `[{"ColumnName":"Price","Operator":">","Value":0}]`,
		`[{"ColumnName":"Id","Operator":"<","Value":100},{"ColumnName":"Price","Operator":">","Value":0}]`}
	var wg sync.WaitGroup
	for range 4 { // four at once per user, five users
		for tok, want := range venueSees {
			wg.Go(func() {
				for _, w := range wheres {
					r := s.query(t, tok, "select Code from Quote"+w)
					if got, ok := codesOf(r); !ok || !slices.Equal(got, want) {
						t.Errorf("%s: select%s = %d %v, want %v", tok, w, r.status, got, want)
					}
				}
				for _, c := range criteria {
					r := s.do(t, tok, "POST", "/query/Quote/select?columns=Code", appJSON, c)
					if got, ok := codesOf(r); !ok || !slices.Equal(got, want) {
						t.Errorf("%s: criteria %s = %d %v, want %v", tok, c, r.status, got, want)
					}
				}
			})
		}
	}
	wg.Wait()
	// A condition that names only other venues' rows finds nothing.
	if got, ok := codesOf(s.query(t, "asx", `select Code from Quote where Venue = 'NZX' or Venue is null`)); !ok || got != nil {
		t.Errorf("asx read %v", got)
	}
}

// TestVenueWrites: an update or a delete touches only the rows of the caller's venues;
// an insert or a SET of a venue the caller does not hold (another venue, a case variant,
// a trailing space, a number, NULL or no venue at all without holding every venue) is
// 403 with the service's JSON error and changes nothing. It failed when the venue
// written was not checked, and when it was compared ignoring case.
func TestVenueWrites(t *testing.T) {
	s := venueService(t)
	affected := func(tok, stmt string, want int64) {
		t.Helper()
		r := s.query(t, tok, stmt)
		if r.status != 200 || r.result.RowsAffected == nil || *r.result.RowsAffected != want {
			t.Fatalf("%s: %s: %d %s, want %d rows affected", tok, stmt, r.status, r.body, want)
		}
	}
	affected("asx", `update Quote set Price = 0 where Price > 0 or Venue = 'NZX'`, 1)
	affected("nzx", `delete from Quote where Id > 0 or Venue is null`, 1)
	affected("none", `update Quote set Price = 9 where Id > 0`, 0)
	if r := s.query(t, "both", `select Code, Price from Quote order by Code`); r.status != 200 ||
		!strings.HasSuffix(strings.TrimSpace(r.body), `"Rows":[["BHP",0],["NUL",4]]}`) {
		t.Fatalf("after the writes: %d %s", r.status, r.body)
	}
	for _, tr := range []struct{ tok, path, ct, body string }{
		{"asx", "/query", textPlain, `insert into Quote (Id, Code, Venue) values (10, 'X', 'NZX')`},
		{"asx", "/query", textPlain, `insert into Quote (Id, Code, Venue) values (10, 'X', 'ASX'), (11, 'Y', 'NZX')`},
		{"asx", "/query", textPlain, `insert into Quote (Id, Code, Venue) values (10, 'X', 'asx')`},
		{"asx", "/query", textPlain, `insert into Quote (Id, Code, Venue) values (10, 'X', 'ASX ')`},
		{"asx", "/query", textPlain, `insert into Quote (Id, Code, Venue) values (10, 'X', null)`},
		{"asx", "/query", textPlain, `insert into Quote (Id, Code) values (10, 'X')`},
		{"depth", "/query", textPlain, `insert into Quote (Id, Code, Venue) values (10, 'X', 'ASX')`},
		{"asx", "/query", textPlain, `update Quote set Venue = 'NZX' where Id = 1`},
		{"asx", "/query", textPlain, `update Quote set VENUE = 'asx' where Id = 1`},
		{"asx", "/query", textPlain, `update Quote set Venue = null where Id = 1`},
		{"asx", "/query", textPlain, `update Quote set Venue = 123 where Id = 1`},
		{"asx", "/query/Quote/insert", appJSON, `{"Id":10,"Code":"X","venue":"NZX"}`},
		{"asx", "/query/Quote/insert", appJSON, `[{"Id":10,"Code":"X","Venue":"ASX"},{"Id":11,"Code":"Y","Venue":"LSE"}]`},
	} {
		r := s.do(t, tr.tok, "POST", tr.path, tr.ct, tr.body)
		if r.status != 403 || r.result.Error == nil || r.result.Error.Code != queryproxy.CodeForbidden {
			t.Errorf("%s: %s: %d %s, want 403 forbidden", tr.tok, tr.body, r.status, r.body)
		}
	}
	if got, _ := codesOf(s.query(t, "both", `select Code from Quote`)); !slices.Equal(got, []string{"BHP", "NUL"}) {
		t.Fatalf("a refused write changed the table: %v", got)
	}
	// What the caller holds, it writes; a holder of every venue writes rows without one.
	affected("asx", `insert into Quote (Id, Code, Venue) values (10, 'X', 'ASX')`, 1)
	affected("asx", `update Quote set Venue = 'ASX', Code = 'Z' where Id = 10`, 1)
	affected("both", `insert into Quote (Id, Code) values (11, 'Y')`, 1)
	affected("both", `update Quote set Venue = 'NZX' where Id = 11`, 1)
	affected("both", `update Quote set Venue = null where Id = 11`, 1)
	if got, _ := codesOf(s.query(t, "asx", `select Code from Quote`)); !slices.Equal(got, []string{"BHP", "Z"}) {
		t.Fatalf("asx sees %v", got)
	}
}

// TestVenuePolicyChecked: a venue column's configuration mistakes are found before the
// first request: at New, or against the catalog.
func TestVenuePolicyChecked(t *testing.T) {
	eng, err := sqliteengine.Open(t.Context(), sqliteengine.Config{Path: filepath.Join(t.TempDir(), "q.db"), Init: querydb.SQL})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	check := func(p queryproxy.TablePolicy, venues []string) error {
		h, err := queryproxy.New(queryproxy.Config{Engine: eng, Tables: []queryproxy.TablePolicy{p}, Venues: venues, Authenticate: venueAuthenticate})
		if err != nil {
			return err
		}
		return h.CheckCatalog(t.Context())
	}
	base := func() queryproxy.TablePolicy {
		return queryproxy.TablePolicy{Table: "Security", Read: []string{"m"}, VenueColumn: "Exchange", Venues: []string{"ASX"}}
	}
	for name, tc := range map[string]struct {
		mod    func(*queryproxy.TablePolicy)
		venues []string
		wantIn string
	}{
		"no venues":        {func(p *queryproxy.TablePolicy) { p.Venues = nil }, nil, "needs the venues"},
		"bad venue":        {func(p *queryproxy.TablePolicy) { p.Venues = []string{"asx"} }, nil, "not a venue"},
		"bad handler list": {func(p *queryproxy.TablePolicy) { p.Venues = nil }, []string{"ASX "}, "not a venue"},
		"bad feed":         {func(p *queryproxy.TablePolicy) { p.Feed = "Quotes" }, nil, "not a feed"},
		"feed alone":       {func(p *queryproxy.TablePolicy) { p.VenueColumn = "" }, nil, "without a venue column"},
		"hidden":           {func(p *queryproxy.TablePolicy) { p.Hidden = []string{"exchange"} }, nil, "cannot be hidden"},
		"not in table":     {func(p *queryproxy.TablePolicy) { p.VenueColumn = "Venue" }, nil, "not in the table"},
		"not text":         {func(p *queryproxy.TablePolicy) { p.VenueColumn = "Volume" }, nil, "not a text column"},
	} {
		p := base()
		tc.mod(&p)
		if err := check(p, tc.venues); err == nil || !strings.Contains(err.Error(), tc.wantIn) {
			t.Errorf("%s: error %v, want one saying %q", name, err, tc.wantIn)
		}
	}
	if err := check(base(), nil); err != nil {
		t.Errorf("a good policy: %v", err)
	}
	p := base()
	p.Venues = nil
	if err := check(p, []string{"ASX", "NZX"}); err != nil {
		t.Errorf("venues from the handler: %v", err)
	}
}

// TestVenueForwarded: with the iq engine, the filter is added to the forwarded statement
// where the upstream's language holds it (a WHERE of ANDs, or none), exactly, or for a
// holder of every venue, when "or no venue" cannot join the condition, without the rows
// lacking a venue (less, never more); a condition of ORs is refused (403) and nothing is
// forwarded; a caller holding no venue gets an empty result without asking the upstream.
// The upstream is this service over SQLite, which filters nothing. It failed when the
// forwarded statement was the caller's own.
func TestVenueForwarded(t *testing.T) {
	eng, err := sqliteengine.Open(t.Context(), sqliteengine.Config{Path: filepath.Join(t.TempDir(), "q.db"), Init: quoteSchema})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	up, err := queryproxy.New(queryproxy.Config{Engine: eng, Tables: []queryproxy.TablePolicy{{Table: "Quote", Read: []string{"m"}, Write: []string{"m"}}},
		Authenticate: venueAuthenticate})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var sent []string
	upSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		sent = append(sent, string(b))
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		up.ServeHTTP(w, r)
	}))
	defer upSrv.Close()
	cat, err := eng.Catalog(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	fw, err := iqengine.New(iqengine.Config{URL: upSrv.URL, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	h, err := queryproxy.New(queryproxy.Config{Forwarder: fw, Venues: []string{"ASX", "NZX"}, Authenticate: venueAuthenticate,
		Tables: []queryproxy.TablePolicy{{Table: "Quote", Read: []string{"m"}, Write: []string{"m"}, VenueColumn: "Venue"}}})
	if err != nil {
		t.Fatal(err)
	}
	s := &testService{srv: httptest.NewServer(h), h: h}
	defer s.srv.Close()
	for _, tt := range []struct {
		tok, stmt string
		want      []string // nil: no rows
		forwarded string   // "": nothing forwarded
		status    int
	}{
		{"asx", `select Code from Quote`, []string{"BHP"}, `SELECT Code FROM Quote WHERE Venue IN ['ASX']`, 200},
		{"asx", `select Code from Quote where Price > 0 and Code begins 'B'`, []string{"BHP"},
			`SELECT Code FROM Quote WHERE Venue IN ['ASX'] AND Price > 0 AND Code BEGINS 'B'`, 200},
		{"asx", `select Code from Quote where Venue = 'NZX' or Price > 0`, nil, "", 403},
		{"both", `select Code from Quote`, []string{"AIR", "BHP", "NUL"}, `SELECT Code FROM Quote WHERE Venue IN ['ASX', 'NZX'] OR Venue IS NULL`, 200},
		{"both", `select Code from Quote where Price > 0`, []string{"AIR", "BHP"}, `SELECT Code FROM Quote WHERE Venue IN ['ASX', 'NZX'] AND Price > 0`, 200},
		{"both", `select Code from Quote where Venue = 'LSE' or Price > 0`, nil, "", 403},
		{"none", `select Code from Quote where Price > 0`, nil, "", 200},
		{"depth", `select Code from Quote`, nil, "", 200},
		{"asx", `insert into Quote (Id, Code, Venue) values (10, 'X', 'NZX')`, nil, "", 403},
		{"asx", `insert into Quote (Id, Code, Venue) values (10, 'X', 'ASX')`, nil, `INSERT INTO Quote (Id, Code, Venue) VALUES (10, 'X', 'ASX')`, 200},
	} {
		mu.Lock()
		sent = nil
		mu.Unlock()
		r := s.query(t, tt.tok, tt.stmt)
		if r.status != tt.status {
			t.Errorf("%s: %s: %d %s, want %d", tt.tok, tt.stmt, r.status, r.body, tt.status)
			continue
		}
		if r.status == 200 && r.result.RowsAffected == nil {
			if got, ok := codesOf(r); !ok || !slices.Equal(got, tt.want) {
				t.Errorf("%s: %s: rows %v, want %v", tt.tok, tt.stmt, got, tt.want)
			}
		}
		mu.Lock()
		got := strings.Join(sent, "; ")
		mu.Unlock()
		if got != tt.forwarded {
			t.Errorf("%s: %s: forwarded %q, want %q", tt.tok, tt.stmt, got, tt.forwarded)
		}
	}
}
