package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bigNewsConfig is the demo with 100,000 news items of 200 characters (a result of
// some 20 MB, more than the sockets between a client and the gateway hold) and no row
// limit that would refuse it.
func bigNewsConfig(t *testing.T) string {
	t.Helper()
	demo, err := os.ReadFile(filepath.Join(repoRoot, "examples/querydb/demo.sql"))
	if err != nil {
		t.Fatal(err)
	}
	more := "\nWITH RECURSIVE n(i) AS (SELECT 100 UNION ALL SELECT i + 1 FROM n WHERE i < 100100)\n" +
		"INSERT INTO News (Id, Headline, Source, Published, Codes) SELECT i, printf('%0200d', i), 'WIRE', '2026-11-21T09:00:00Z', 'BHP' FROM n;\n"
	initFile := filepath.Join(t.TempDir(), "big.sql")
	if err := os.WriteFile(initFile, append(demo, more...), 0o600); err != nil {
		t.Fatal(err)
	}
	return demoVariant(t, "big-news-share",
		configEdit{anchor: "init_file examples/querydb/demo.sql", insert: "init_file " + initFile, replace: true},
		configEdit{anchor: "\t\tallowed_origins http://localhost:{$GATEHOUSE_HTTP_PORT:8080}\n\t}\n\n\t# Nothing else", insert: "\t\tmax_rows 1000000\n", before: true})
}

// TestQueryUserShareOfThePool: one user holds at most half of the engine's connections
// (the SQLite engine's 4 readers: 2), however slowly it reads: its next query is 429,
// and another user's query is served at once; a result its client stops reading holds
// its connection no longer than the result's write timeout (10 s).
// It failed when: one user's four unread results held all four readers, and another
// user waited until they ended.
func TestQueryUserShareOfThePool(t *testing.T) {
	t.Parallel()
	g := StartGatehouseWith(t, Options{Config: bigNewsConfig(t)})
	trader := g.PasswordGrant(t, "trader", "trader").AccessToken
	demo := g.PasswordGrant(t, "demo", "demo").AccessToken
	post := func(tok, stmt string) *http.Response {
		t.Helper()
		req := mustRequest(t, http.MethodPost, g.Issuer+"/query", strings.NewReader(stmt))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "text/plain")
		c := &http.Client{Timeout: requestTimeout, Transport: &http.Transport{}} // a connection of its own
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var held []*http.Response
	for range 2 {
		resp := post(trader, "select Id, Headline from News")
		if resp.StatusCode != 200 {
			t.Fatalf("a large result: %s", resp.Status)
		}
		held = append(held, resp) // its body never read
	}
	defer func() {
		for _, r := range held {
			r.Body.Close()
		}
	}()
	if resp := post(trader, "select Code from Security"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a third query of the user holding two: %s, want 429", resp.Status)
	} else {
		resp.Body.Close()
	}
	start := time.Now()
	resp := post(demo, "select Code from Security")
	resp.Body.Close()
	if resp.StatusCode != 200 || time.Since(start) > 2*time.Second {
		t.Errorf("another user's query while the first holds its share: %s after %v", resp.Status, time.Since(start))
	}
	// The unread results end at their write timeout: the user's share is free again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := post(trader, "select Code from Security")
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unread results still hold the user's share after 30 s: %s", resp.Status)
		}
		time.Sleep(time.Second)
	}
}
