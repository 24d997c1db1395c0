package queryproxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHangUpInsertRunsToAnswer: a caller hanging up once a forwarded insert
// was sent does not cut it short: the upstream answers within the time
// limit, so the audit says ok, rows_affected 1.
func TestHangUpInsertRunsToAnswer(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"RowsAffected":1}`)
	}))
	defer up.Close()
	srv, logs := iqWriteService(t, up.URL, 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/query", strings.NewReader("insert into Order (Code) values ('BHP')"))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "text/plain")
	_, _ = http.DefaultClient.Do(req)
	time.Sleep(600 * time.Millisecond)
	e := logs.FilterMessage("query write").All()
	if len(e) != 1 || e[0].ContextMap()["outcome"] != "ok" {
		t.Fatalf("audit %v", e)
	}
}
