package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Panics end one unit of work, never the process: through a gatehouse
// built with the gatehouse_faults tag, a panic is injected at a point
// (GATEHOUSE_FAULTS names it, with how many times it fires), and the test
// checks what ends (a socket with 1011, a request with a 500 in its
// protocol's form, a streamed result with its trailer, a loop's pass) and
// what goes on (the process, other sessions, a new session: no lock the
// panic interrupted stays held), and that the panic was logged at Error
// with its stack and counted in gatehouse_panics_total.

// TestDefaultBinaryHasNoFaultHook: the binary every other test runs, built
// as docs/building.md builds it, holds no fault hook.
func TestDefaultBinaryHasNoFaultHook(t *testing.T) {
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("gatehouse-fault-injection-armed")) {
		t.Fatal("the default build holds the fault hook")
	}
}

// startFaulty starts the demo (or config) with panics armed at faults.
func startFaulty(t *testing.T, config, faults string) *Gatehouse {
	t.Helper()
	return StartGatehouseWith(t, Options{Config: config, Binary: faultBinary(t), Env: []string{"GATEHOUSE_FAULTS=" + faults}})
}

// checkPanicked checks that component's panic was logged and counted n
// times, and that the process is still running.
func checkPanicked(t *testing.T, g *Gatehouse, component string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	series := `gatehouse_panics_total{component="` + component + `"}`
	var got float64
	for {
		got = metricValue(scrapeMetrics(t, g), series)
		if got >= float64(n) || time.Now().After(deadline) {
			break
		}
		time.Sleep(pollInterval)
	}
	if got != float64(n) {
		t.Errorf("%s = %v, want %d", series, got, n)
	}
	logs := g.Logs()
	if !strings.Contains(logs, `"msg":"panic recovered"`) || !strings.Contains(logs, `"component":"`+component+`"`) ||
		!strings.Contains(logs, "gatehouse-fault-injection-armed") || !strings.Contains(logs, "goroutine ") {
		t.Errorf("no Error log of %s's panic with its stack", component)
	}
	if !g.Running() {
		t.Fatal("the process died")
	}
}

// closedWith reads c until it ends and returns its close code (-1 without
// a close frame).
func closedWith(t *testing.T, c *websocket.Conn) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wsTimeout))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		if ce, ok := errors.AsType[*websocket.CloseError](err); ok {
			return ce.Code
		}
		return -1
	}
}

// ticks subscribes c to BHP's quote and waits for n updates.
func ticks(t *testing.T, c *websocket.Conn, txid, n int) {
	t.Helper()
	sub := `{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","TransactionID":` + strconv.Itoa(txid) + `}`
	if err := c.WriteMessage(websocket.TextMessage, []byte(sub)); err != nil {
		t.Fatalf("Sub: %v", err)
	}
	waitTicks(t, c, n)
}

// waitTicks waits for n messages of BHP's quote.
func waitTicks(t *testing.T, c *websocket.Conn, n int) {
	t.Helper()
	deadline := time.Now().Add(wsTimeout)
	for got := 0; got < n; {
		_ = c.SetReadDeadline(deadline)
		_, raw, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("after %d of %d quotes: %v", got, n, err)
		}
		var z zenith
		if json.Unmarshal(raw, &z) == nil && z.Controller == "Market" && strings.HasPrefix(z.Topic, "Security!BHP") && z.Action != "Error" {
			got++
		}
	}
}

// TestPanicsEndOneSession: a panic in a session's client reader (also
// inside the session's lock), its writer, or its backend reader closes
// that socket with 1011; the process, another live session and a new one
// go on.
func TestPanicsEndOneSession(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		point     string
		component string // the goroutine the panic ends
		send      string // what session 1 sends after it authenticated
	}{
		{"ws.client_reader", "ws.client_reader", `{"Controller":"Zenith","Topic":"ServerInfo","TransactionID":1}`},
		{"ws.session_locked", "ws.client_reader", `{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","TransactionID":1}`},
		{"ws.writer", "ws.writer", `{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":1}`},
		{"ws.backend_reader", "ws.backend_reader", ""},
	} {
		t.Run(tt.point, func(t *testing.T) {
			g := startFaulty(t, demoConfig, tt.point+"=1")
			tok := g.PasswordGrant(t, "demo", "demo").AccessToken
			// A bystander without its own backend leg yet: it authenticates
			// after the fault fired.
			other, _, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", "")
			if err != nil {
				t.Fatal(err)
			}
			c, _, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tok)
			if err != nil {
				t.Fatal(err)
			}
			if tt.send != "" {
				if err := c.WriteMessage(websocket.TextMessage, []byte(tt.send)); err != nil {
					t.Fatal(err)
				}
			}
			if code := closedWith(t, c); code != websocket.CloseInternalServerErr {
				t.Errorf("the session that panicked closed with %d, want 1011", code)
			}
			checkPanicked(t, g, tt.component, 1)
			// The bystander authenticates and gets quotes; a new session
			// opens and gets them too.
			z := exchange(t, other, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":5,"Data":{"Provider":"Bearer","AccessToken":"`+tok+`"}}`, 5)
			if !strings.Contains(string(z.Data), `"Result":"Success"`) {
				t.Fatalf("bystander's AuthToken: %s", z.Data)
			}
			ticks(t, other, 6, 2)
			c2, _, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tok)
			if err != nil {
				t.Fatal(err)
			}
			ticks(t, c2, 7, 2)
			waitTicks(t, other, 1)
		})
	}
}

// TestPanicInTheSupervisorLoop: a panic in the supervisor's walk, while it
// holds the gateway's lock, restarts the supervisor; the lock is free (a
// new session opens), and live sessions go on.
func TestPanicInTheSupervisorLoop(t *testing.T) {
	t.Parallel()
	g := startFaulty(t, demoConfig, "ws.gateway_locked=2")
	tok := g.PasswordGrant(t, "demo", "demo").AccessToken
	c, _, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tok)
	if err != nil {
		t.Fatal(err)
	}
	ticks(t, c, 1, 1)
	checkPanicked(t, g, "ws.supervisor", 2)
	c2, _, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tok)
	if err != nil {
		t.Fatal(err)
	}
	ticks(t, c2, 2, 2)
	waitTicks(t, c, 2)
}

// TestPanicInTheMarketLoop: a panic in the demo backend's tick restarts
// its loop after a pause; quotes tick again.
func TestPanicInTheMarketLoop(t *testing.T) {
	t.Parallel()
	g := startFaulty(t, demoConfig, "demo.market=1")
	checkPanicked(t, g, "demo.market", 1)
	tok := g.PasswordGrant(t, "demo", "demo").AccessToken
	c, _, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tok)
	if err != nil {
		t.Fatal(err)
	}
	ticks(t, c, 1, 2)
}

// TestPanicsEndOneRequest: a panic in the token endpoint is a 500 with an
// RFC 6749 body, in the query service a 500 with its JSON error body, and
// once a result is streaming its trailer says internal_error; the next
// request is served.
func TestPanicsEndOneRequest(t *testing.T) {
	t.Parallel()
	t.Run("token endpoint", func(t *testing.T) {
		g := startFaulty(t, demoConfig, "identity.token=1")
		resp, body := g.PostToken(t, map[string][]string{"grant_type": {"password"}, "client_id": {"demo-app"},
			"username": {"demo"}, "password": {"demo"}}, "", "")
		if resp.StatusCode != http.StatusInternalServerError || decodeError(t, resp, body).Error != "server_error" {
			t.Errorf("a panicking token request: %s %s", resp.Status, body)
		}
		checkPanicked(t, g, "identity.http", 1)
		g.PasswordGrant(t, "demo", "demo")
	})
	t.Run("query before the result", func(t *testing.T) {
		g := startFaulty(t, demoConfig, "query.request=1")
		tok := g.PasswordGrant(t, "demo", "demo").AccessToken
		resp, out, body := g.query(t, tok, "/query", "text/plain", "select Code from Security")
		if resp.StatusCode != http.StatusInternalServerError || out.Error == nil || out.Error.Code != "internal_error" || out.Error.RequestId == "" {
			t.Errorf("a panicking query: %s %s", resp.Status, body)
		}
		checkPanicked(t, g, "query.http", 1)
		if resp, _, body := g.query(t, tok, "/query", "text/plain", "select Code from Security"); resp.StatusCode != http.StatusOK {
			t.Errorf("the next query: %s %s", resp.Status, body)
		}
	})
	t.Run("query while streaming", func(t *testing.T) {
		// The demo with 5,000 news items: a result far larger than the
		// buffer sent before the first flush.
		dir := t.TempDir()
		demo, err := os.ReadFile(filepath.Join(repoRoot, "examples/querydb/demo.sql"))
		if err != nil {
			t.Fatal(err)
		}
		more := "\nWITH RECURSIVE n(i) AS (SELECT 100 UNION ALL SELECT i + 1 FROM n WHERE i < 5100)\n" +
			"INSERT INTO News (Id, Headline, Source, Published, Codes) SELECT i, 'Headline number ' || i, 'WIRE', '2026-11-21T09:00:00Z', 'BHP' FROM n;\n"
		initFile := filepath.Join(dir, "big.sql")
		if err := os.WriteFile(initFile, append(demo, more...), 0o600); err != nil {
			t.Fatal(err)
		}
		config := demoVariant(t, "big-news", configEdit{anchor: "init_file examples/querydb/demo.sql", insert: "init_file " + initFile, replace: true})
		g := startFaulty(t, config, "query.stream=1")
		tok := g.PasswordGrant(t, "demo", "demo").AccessToken
		req := mustRequest(t, http.MethodPost, g.Issuer+"/query", strings.NewReader("select Id, Headline from News"))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "text/plain")
		resp, err := g.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Trailer.Get("Gatehouse-Error") != "internal_error" || bytes.HasSuffix(body, []byte("]}")) {
			t.Errorf("a result that panicked while streaming: %s, trailer %q, %d bytes ending %q", resp.Status, resp.Trailer.Get("Gatehouse-Error"), len(body), body[max(0, len(body)-10):])
		}
		checkPanicked(t, g, "query.http", 1)
		if resp, out, body := g.query(t, tok, "/query", "text/plain", "select Id from News"); resp.StatusCode != http.StatusOK || len(out.Rows) < 5000 {
			t.Errorf("the next query: %s %.200s", resp.Status, body)
		}
	})
}
