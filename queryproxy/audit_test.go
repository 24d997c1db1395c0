package queryproxy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/audit/audittest"
	"github.com/gatehouse/gatehouse/queryproxy"
)

// TestAuditRecordsEveryQuery: each query, reads included, records one
// query record with the caller, the statement's kind, the table, a venue
// table's feed and the venues the caller's filter allowed, the rows, the
// outcome and the status; never the statement's values or the token.
// Requests that are not queries record nothing. It failed when reads
// went unrecorded (only writes were logged), and when the venues were
// left out.
func TestAuditRecordsEveryQuery(t *testing.T) {
	a := &audittest.Recorder{}
	s := venueServiceWith(t, func(c *queryproxy.Config) { c.Audit = a })
	const secretValue, secretCode = "98765.4321", "SECRETCODE"
	rid := []string{"Request-Id", "r1"}
	tests := []struct {
		name                string
		tok, path, ct, body string
		want                string // "" for none
	}{
		{"IQL read", "both", "/query", textPlain, "select Code from Quote where Price > 0",
			"query client_id=c endpoint=query feed=quotes outcome=ok request_id=r1 rows=3 statement=select status=200 sub=both table=Quote venues=[ASX NZX]"},
		{"structured read", "asx", "/query/Quote/select?columns=Code", appJSON, `[{"ColumnName":"Price","Operator":">","Value":0}]`,
			"query client_id=c endpoint=select feed=quotes outcome=ok request_id=r1 rows=1 statement=select status=200 sub=asx table=Quote venues=[ASX]"},
		{"no venue held", "none", "/query", textPlain, "select Code from Quote",
			"query client_id=c endpoint=query feed=quotes outcome=ok request_id=r1 rows=0 statement=select status=200 sub=none table=Quote venues=[]"},
		{"write", "asx", "/query", textPlain, "update Quote set Price = " + secretValue + " where Code = '" + secretCode + "'",
			"query client_id=c endpoint=query feed=quotes outcome=ok request_id=r1 rows=0 statement=update status=200 sub=asx table=Quote venues=[ASX]"},
		{"write refused", "asx", "/query", textPlain, "insert into Quote (Id, Code, Venue, Price) values (9, '" + secretCode + "', 'NZX', " + secretValue + ")",
			"query client_id=c endpoint=query outcome=forbidden request_id=r1 statement=insert status=403 sub=asx table=Quote"},
		{"syntax error", "both", "/query", textPlain, "select from where " + secretValue,
			"query client_id=c endpoint=query outcome=syntax_error request_id=r1 status=400 sub=both table=unknown"},
		{"unknown table", "both", "/query", textPlain, "select Code from Nothing",
			"query client_id=c endpoint=query outcome=unknown_table request_id=r1 statement=select status=404 sub=both table=unknown"},
		{"unauthenticated", "not-a-token", "/query", textPlain, "select Code from Quote",
			"query endpoint=query outcome=unauthorized request_id=r1 status=401 table=unknown"},
		{"no such route", "both", "/nothing", textPlain, "select Code from Quote", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.do(t, tt.tok, "POST", tt.path, tt.ct, tt.body, rid...)
			got := a.Take()
			var want []string
			if tt.want != "" {
				want = []string{tt.want}
			}
			if !slices.Equal(got, want) {
				t.Errorf("records:\n got %q\nwant %q", got, want)
			}
			for _, r := range got {
				for _, secret := range []string{secretValue, secretCode, "Bearer", "Price"} {
					if strings.Contains(r, secret) {
						t.Errorf("a record holds %q: %s", secret, r)
					}
				}
			}
		})
	}
}

// TestAuditRefusingRefusesQueries: while the auditor refuses, a query is
// answered 503 unavailable and runs nothing. It failed when the handler
// ignored Refusing.
func TestAuditRefusingRefusesQueries(t *testing.T) {
	a := &audittest.Recorder{}
	s := venueServiceWith(t, func(c *queryproxy.Config) { c.Audit = a })
	a.Refuse(true)
	r := s.query(t, "both", "select Code from Quote")
	if r.status != 503 || !strings.Contains(r.body, `"Code":"unavailable"`) {
		t.Errorf("a query while the audit refuses: %d %s", r.status, r.body)
	}
	a.Refuse(false)
	if r := s.query(t, "both", "select Code from Quote"); r.status != 200 {
		t.Errorf("a query once the audit writes again: %d %s", r.status, r.body)
	}
}
