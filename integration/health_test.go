package integration

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// probe GETs path on g and decodes a probe's answer.
func probe(t *testing.T, g *Gatehouse, path string) (int, map[string]any, string) {
	t.Helper()
	resp, body := g.Do(t, mustRequest(t, http.MethodGet, g.URL+path, nil))
	var v map[string]any
	_ = json.Unmarshal(body, &v)
	return resp.StatusCode, v, string(body)
}

// TestDemoProbesAndPages: the demo serves /healthz and /readyz (every check named,
// none failed), / with links to what it offers, and 404 for a path it does not serve.
// It failed when: every unknown path answered 200 with an empty body, so a probe
// passed on a typo.
func TestDemoProbesAndPages(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	if status, v, body := probe(t, g, "/healthz"); status != 200 || v["status"] != "live" {
		t.Errorf("/healthz: %d %s", status, body)
	}
	status, v, body := probe(t, g, "/readyz")
	checks, _ := v["checks"].(map[string]any)
	if status != 200 || v["status"] != "ready" || len(checks) != 5 {
		t.Errorf("/readyz: %d %s", status, body)
	}
	for _, name := range []string{"store", "signing_keys", "query_engine", "message_backend", "message_backend_2"} {
		if checks[name] != "ok" {
			t.Errorf("/readyz: check %s is %v: %s", name, checks[name], body)
		}
	}
	// The console serves /, /callback and its own files under /console/:
	// nothing else there.
	for _, path := range []string{"/nope", "/healthz2", "/connectx", "/callbackx", "/console/", "/console/nope.js"} {
		if resp, body := g.Do(t, mustRequest(t, http.MethodGet, g.URL+path, nil)); resp.StatusCode != 404 {
			t.Errorf("%s: %d %.100s, want 404", path, resp.StatusCode, body)
		}
	}
	resp, page := g.Do(t, mustRequest(t, http.MethodGet, g.URL+"/", nil))
	if resp.StatusCode != 200 || !strings.Contains(string(page), `href="/demo/"`) || !strings.Contains(string(page), `href="/readyz"`) {
		t.Errorf("/: %d %.300s", resp.StatusCode, page)
	}
	// The one plain line among the JSON logs that tells a newcomer where to go.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(g.Logs(), "\nGatehouse is ready: open "+g.Issuer+"/\n") {
		if time.Now().After(deadline) {
			t.Fatalf("the demo did not say where to open it: want %q in its output", "Gatehouse is ready: open "+g.Issuer+"/")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReadinessNamesTheFailedCheck: with the message backend down, readiness is 503
// naming the check, not its address or error, and 200 when the config marks that
// check optional (an outage of the shared backend need not take the identity server
// out of a balancer); liveness stays 200.
func TestReadinessNamesTheFailedCheck(t *testing.T) {
	t.Parallel()
	dead := strconv.Itoa(reservePort(t))
	for _, optional := range []bool{false, true} {
		extra := ""
		if optional {
			extra = " optional"
		}
		config := demoVariant(t, "dead-backend"+extra, configEdit{
			anchor:  "\tgatehouse_ws /ws {\n\t\tupstream ws://127.0.0.1:{$GATEHOUSE_BACKEND_PORT:9090}/\n",
			insert:  "\tgatehouse_ws /ws {\n\t\tupstream ws://127.0.0.1:" + dead + "/\n\t\treadiness market_feed" + extra + "\n",
			replace: true,
		})
		g := StartGatehouseWith(t, Options{Config: config})
		status, v, body := probe(t, g, "/readyz")
		checks, _ := v["checks"].(map[string]any)
		want, wantStatus := "failed", 503
		if optional {
			want, wantStatus = "failed (optional)", 200
		}
		if status != wantStatus || checks["market_feed"] != want || checks["store"] != "ok" {
			t.Errorf("/readyz with the backend down (optional %v): %d %s", optional, status, body)
		}
		if !optional && !strings.Contains(body, `"failed":["market_feed"]`) {
			t.Errorf("/readyz does not name the failed check: %s", body)
		}
		if strings.Contains(body, dead) || strings.Contains(body, "127.0.0.1") || strings.Contains(body, "refused") {
			t.Errorf("/readyz tells an address or an error: %s", body)
		}
		if status, _, body := probe(t, g, "/healthz"); status != 200 {
			t.Errorf("/healthz with the backend down: %d %s", status, body)
		}
	}
}

// TestEveryMetricIsDocumented: after a short workload on the demo (tokens
// issued and refused, a socket subscribed and refused a message, a query),
// every gatehouse_ metric the binary exports has its row in
// docs/operations.md.
func TestEveryMetricIsDocumented(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	tok := g.PasswordGrant(t, "demo", "demo")
	g.PostToken(t, url.Values{"grant_type": {"password"}, "username": {"demo"}, "password": {"wrong"}, "client_id": {"demo-app"}}, "", "")
	c, _, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tok.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	exchange(t, c, `{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","TransactionID":1}`, 1)
	exchange(t, c, `{"Controller":"Trading","Topic":"QueryAccounts","Action":"Publish","TransactionID":2}`, 2)
	req := mustRequest(t, http.MethodPost, g.URL+"/query", strings.NewReader("select Code from Security"))
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	g.Do(t, req)
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for line := range strings.Lines(string(scrapeMetrics(t, g))) {
		name, ok := strings.CutPrefix(line, "# TYPE gatehouse_")
		if !ok {
			continue
		}
		name = "gatehouse_" + strings.Fields(name)[0]
		seen++
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("%s is exported but docs/operations.md has no row for it", name)
		}
	}
	if seen < 15 {
		t.Fatalf("only %d gatehouse_ metrics exported after the workload", seen)
	}
}
