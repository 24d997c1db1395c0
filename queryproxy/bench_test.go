package queryproxy_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkPointSelect serves the structured point select of
// bench/querybench through the handler alone (no HTTP server, no token
// check): the handler's own time and allocations per request.
func BenchmarkPointSelect(b *testing.B) {
	s := newService(b, nil)
	const body = `[{"ColumnName":"Code","Operator":"=","Value":"BHP"},{"ColumnName":"Exchange","Operator":"=","Value":"ASX"}]`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/query/Security/select?columns=Code,LastPrice,Volume", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer demo")
		w := httptest.NewRecorder()
		s.h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}
