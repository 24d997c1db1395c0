package queryproxy_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/queryproxy"
)

// BenchmarkPointSelect serves the structured point select of
// bench/querybench through the handler alone (no HTTP server, no token
// check): the handler's own time and allocations per request, on Security
// as the demo's plain table and as a venue table (venue_column Exchange)
// read by a caller holding ASX:quotes and NZX:quotes.
func BenchmarkPointSelect(b *testing.B) {
	for _, venue := range []bool{false, true} {
		name := "plain"
		if venue {
			name = "venue"
		}
		b.Run(name, func(b *testing.B) {
			s := newService(b, func(c *queryproxy.Config) {
				if !venue {
					return
				}
				c.Tables = []queryproxy.TablePolicy{{Table: "Security", Read: []string{"Service/Market"}, VenueColumn: "Exchange", Venues: []string{"ASX", "NZX"}}}
				caller := &queryproxy.Caller{Subject: "u", ClientID: "c", Scopes: []string{"Service/Market"}, Entitlements: entitle.MustParse("ASX:quotes NZX:quotes")}
				c.Authenticate = func(http.ResponseWriter, *http.Request) (*queryproxy.Caller, bool) { return caller, true }
			})
			const body = `[{"ColumnName":"Code","Operator":"=","Value":"BHP"},{"ColumnName":"Exchange","Operator":"=","Value":"ASX"}]`
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/query/Security/select?columns=Code,LastPrice,Volume", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer demo")
				w := httptest.NewRecorder()
				s.h.ServeHTTP(w, req)
				if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"BHP"`) {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}
