package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/examples/querydb"
)

// Market-data entitlements through the demo binary (docs/entitlements.md):
// the original web client's messages and the query service for the
// demo's three users, against a truth table written from the model; a
// pair taken from a user mid-session; RFC 9396 requests that narrow.

// demoPairs are the demo users' entitlements, as examples/users.json
// gives them and the README's table of demo users says.
var demoPairs = map[string]entitle.Set{
	"viewer": {},
	"demo":   entitle.MustParse("ASX:quotes"),
	"trader": entitle.MustParse("ASX:quotes ASX:depth NZX:quotes"),
}

// replaySymbols are symbols of both venues the demo backend serves.
var replaySymbols = []string{"BHP.ASX", "CBA.ASX", "AIR.NZX", "FPH.NZX"}

// topicFeeds is the truth table's rule, written from the model rather
// than from the gateway's venue table: a symbol's venue is what follows
// its dot; Security is that venue's quotes, Depth its depth.
var topicFeeds = map[string]string{"Security": "quotes", "Depth": "depth"}

// entitledTo says whether pairs allow a subscription to topic!symbol.
func entitledTo(pairs entitle.Set, topic, symbol string) bool {
	venue := symbol[strings.LastIndexByte(symbol, '.')+1:]
	return pairs.Has(venue, topicFeeds[topic])
}

// demoSecurities are the (Code, Exchange) rows of the demo database's
// Security table, read from its SQL script (ground truth from the data,
// not from an engine).
func demoSecurities(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "querydb", "demo.sql"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "INSERT INTO Security (")
	if !ok {
		t.Fatal("demo.sql inserts no Security rows")
	}
	block, _, _ = strings.Cut(block, ";")
	rows := map[string]string{}
	for _, m := range regexp.MustCompile(`\('(\w+)', '(\w+)'`).FindAllStringSubmatch(block, -1) {
		rows[m[1]+"."+m[2]] = m[2]
	}
	if len(rows) < 10 || !slices.Contains(mapValues(rows), "NZX") {
		t.Fatalf("demo.sql's Security rows: %v, want ASX and NZX ones", rows)
	}
	return rows
}

func mapValues(m map[string]string) []string {
	var vs []string
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}

// entitlementsOf is the Entitlements of an Identify's Data.
func entitlementsOf(t *testing.T, m *liveMsg) []string {
	t.Helper()
	var d struct{ Entitlements *[]string }
	if err := json.Unmarshal(m.Data, &d); err != nil || d.Entitlements == nil {
		t.Fatalf("no Entitlements in %s (%v)", m, err)
	}
	return *d.Entitlements
}

// TestEntitlementsReplay runs, for viewer, demo and trader, the original
// web client's messages (on /Zenith, ZenithJson: AuthToken, a Sub of
// Security and of Depth for symbols of both venues) and the query
// service's selects of Security, through the demo binary, on SQLite and
// on PostgreSQL (the store and the query engine both), and compares each
// answer with the truth table: a subscription is confirmed with its
// snapshot, or refused with Error/Authority and never reaches the
// backend; a select returns exactly the rows of the venues held. It
// failed when the gateway let Depth subscriptions through unchecked.
func TestEntitlementsReplay(t *testing.T) {
	t.Parallel()
	securities := demoSecurities(t)
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		replayEntitlements(t, StartGatehouse(t), securities)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		store, data := freshDatabase(t), freshDatabase(t)
		execSQL(t, data, querydb.PostgresSQL)
		config := demoVariant(t, "entitlements-postgres",
			configEdit{anchor: anchorGatehouse, insert: "\t\tstore postgres {\n\t\t\tdsn_env GATEHOUSE_STORE_DSN\n\t\t}\n"},
			configEdit{anchor: anchorQueryEngine, insert: "\t\tengine postgres {\n\t\t\tdsn_env GATEHOUSE_QUERY_DSN\n", replace: true})
		g := StartGatehouseWith(t, Options{Config: config, Env: []string{"GATEHOUSE_STORE_DSN=" + store, "GATEHOUSE_QUERY_DSN=" + data}})
		replayEntitlements(t, g, securities)
	})
}

// anchorQueryEngine is the first two lines of the demo's query engine.
const anchorQueryEngine = "\t\tengine sqlite {$GATEHOUSE_QUERY_DB:} {\n\t\t\tinit_file examples/querydb/demo.sql\n"

func replayEntitlements(t *testing.T, g *Gatehouse, securities map[string]string) {
	for _, user := range []string{"viewer", "demo", "trader"} {
		pairs := demoPairs[user]
		tok := g.PasswordGrant(t, user, user)
		g.AddSecret(b64(tok.AccessToken))

		// The socket, as the original web client speaks it.
		d := websocket.Dialer{HandshakeTimeout: motifOpenTimeout, Subprotocols: []string{"ZenithJson"}}
		conn, resp, err := d.Dial(fmt.Sprintf("ws://localhost:%d/Zenith?version=2.0", g.Port), nil)
		if err != nil {
			t.Fatalf("%s: open: %v (%v)", user, err, resp)
		}
		c := watch(t, user, conn)
		const base = 4503599627370496
		tid := func(i int) string { return strconv.FormatInt(base+int64(i), 10) }
		if d, _ := motifAuthToken(t, c, tid(0), b64(tok.AccessToken)); d.Result != "Success" {
			t.Fatalf("%s: AuthToken: %+v", user, d)
		}
		if got := entitlementsOf(t, c.request(`{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":`+tid(1)+`}`, tid(1))); !slices.Equal(got, pairs.Strings()) {
			t.Errorf("%s: QueryIdentify lists %q, want %q", user, got, pairs.Strings())
		}
		n := 2
		for _, topic := range []string{"Security", "Depth"} {
			for _, sym := range replaySymbols {
				full := topic + "!" + sym
				m := c.request(msg("Market", full, "Sub", tid(n)), tid(n))
				want := entitledTo(pairs, topic, sym)
				switch {
				case want && (m.Action != "Sub" || !m.Confirm):
					t.Errorf("%s: Sub %s: %s, want its confirmation (the truth table allows it)", user, full, m)
				case want:
					c.next(user+": the snapshot of "+full, wsTimeout, func(m *liveMsg) bool { return m.update(full) })
				case !m.isError(tid(n), "Authority"):
					t.Errorf("%s: Sub %s: %s, want Error/Authority (the truth table refuses it)", user, full, m)
				}
				n++
			}
		}
		conn.Close()

		// The query service: IQL and a structured select of Security.
		want := map[string]bool{}
		for sym, venue := range securities {
			if pairs.Has(venue, "quotes") {
				want[sym] = true
			}
		}
		resp, res, body := g.query(t, tok.AccessToken, "/query", "text/plain", "select Code, Exchange from Security")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: IQL select: %d %s", user, resp.StatusCode, body)
		}
		checkRows(t, user+": IQL select", res, want)
		resp, res, body = g.query(t, tok.AccessToken, "/query/Security/select?columns=Code,Exchange", "application/json", `[]`)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: structured select: %d %s", user, resp.StatusCode, body)
		}
		checkRows(t, user+": structured select", res, want)
		resp, res, _ = g.query(t, tok.AccessToken, "/query/Security/select?columns=Code,Exchange", "application/json",
			`[{"ColumnName":"Exchange","Operator":"=","Value":"NZX"}]`)
		nzx := map[string]bool{}
		for sym := range want {
			if strings.HasSuffix(sym, ".NZX") {
				nzx[sym] = true
			}
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: select of NZX: %d", user, resp.StatusCode)
		}
		checkRows(t, user+": select of NZX", res, nzx)
	}
}

// checkRows fails unless res holds exactly the rows want names, as
// CODE.EXCHANGE.
func checkRows(t *testing.T, what string, res queryResult, want map[string]bool) {
	t.Helper()
	codes, venues := res.column(t, "Code"), res.column(t, "Exchange")
	got := map[string]bool{}
	for i := range codes {
		got[codes[i]+"."+venues[i]] = true
	}
	if len(got) != len(codes) || len(got) != len(want) {
		t.Fatalf("%s: rows %v, want %v", what, got, want)
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("%s: rows %v, want %v", what, got, want)
		}
	}
}

// backendStats reads the demo backend's count of live subscriptions by
// venue and topic ("NZX/Security").
func backendStats(t *testing.T, g *Gatehouse) map[string]int {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/stats", g.BackendPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct{ Subscriptions map[string]int }
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s.Subscriptions
}

// statsBecome waits until the backend's counts of the keys in want are
// want.
func statsBecome(t *testing.T, g *Gatehouse, want map[string]int) {
	t.Helper()
	deadline := time.Now().Add(wsTimeout)
	for {
		got := backendStats(t, g)
		ok := true
		for k, v := range want {
			ok = ok && got[k] == v
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backend's subscriptions: %v, want %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestEntitlementTakenMidSession: trader holds two NZX and two ASX
// subscriptions; `gatehouse user unentitle trader NZX:quotes` ends
// exactly the NZX ones (Error/Authority and a server Unsub each; the
// backend's count of NZX subscriptions falls to 0) while the ASX ones keep
// flowing, and his earlier access token reads no query rows any more.
func TestEntitlementTakenMidSession(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	tok := g.PasswordGrant(t, "trader", "trader")
	c := liveSession(t, g, "trader", tok.AccessToken)
	topics := []string{"Security!BHP.ASX", "Depth!BHP.ASX", "Security!AIR.NZX", "Security!FPH.NZX"}
	for i, tp := range topics {
		subscribeSecurity(t, c, tp, strconv.Itoa(10+i))
	}
	statsBecome(t, g, map[string]int{"ASX/Security": 1, "ASX/Depth": 1, "NZX/Security": 2})
	if resp, _, body := g.query(t, tok.AccessToken, "/query", "text/plain", "select Code from Security where Exchange = 'NZX'"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "AIR") {
		t.Fatalf("trader's NZX rows before: %d %s", resp.StatusCode, body)
	}

	mark := c.mark()
	runCLI(t, g, "user", "unentitle", "trader", "NZX:quotes")
	ended := map[string]bool{}
	c.until("the server Unsubs of both NZX subscriptions", 3*wsTimeout, func(m *liveMsg) bool {
		if m.Action == "Unsub" && m.Confirm {
			ended[m.Topic] = true
		}
		return len(ended) == 2
	})
	if !ended["Security!AIR.NZX"] || !ended["Security!FPH.NZX"] {
		t.Fatalf("ended %v, want the two NZX subscriptions", ended)
	}
	for _, m := range c.since(mark) {
		if strings.Contains(m.Topic, ".ASX") && (m.Action == "Unsub" || m.Action == "Error") {
			t.Fatalf("an ASX subscription was touched: %s", m)
		}
		if strings.Contains(m.Topic, ".NZX") && m.Action == "Error" && m.errorCode() != "Authority" {
			t.Fatalf("an NZX subscription ended with %s, want Error/Authority", m)
		}
	}
	statsBecome(t, g, map[string]int{"ASX/Security": 1, "ASX/Depth": 1, "NZX/Security": 0})
	for _, tp := range []string{"Security!BHP.ASX", "Depth!BHP.ASX"} {
		c.next("an update of "+tp+" after the change", wsTimeout, func(m *liveMsg) bool { return m.update(tp) })
	}
	if m := c.request(msg("Market", "Security!SPK.NZX", "Sub", "30"), "30"); !m.isError("30", "Authority") {
		t.Fatalf("a new NZX Sub after the change: %s", m)
	}
	if got := entitlementsOf(t, c.request(`{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":31}`, "31")); !slices.Equal(got, []string{"ASX:depth", "ASX:quotes"}) {
		t.Fatalf("QueryIdentify after the change: %q", got)
	}
	req := mustRequest(t, http.MethodPost, g.Issuer+"/query", strings.NewReader("select Code from Security where Exchange = 'NZX'"))
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Content-Type", "text/plain")
	if resp, body := g.Do(t, req); resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "AIR") {
		t.Fatalf("trader's earlier token after the change: %d %s, want 401", resp.StatusCode, body)
	}
	fresh := g.PasswordGrant(t, "trader", "trader")
	if resp, _, body := g.query(t, fresh.AccessToken, "/query", "text/plain", "select Code from Security where Exchange = 'NZX'"); resp.StatusCode != http.StatusOK || strings.Contains(body, "AIR") {
		t.Fatalf("trader's NZX rows with a fresh token: %d %s, want none", resp.StatusCode, body)
	}
}

// TestEntitlementsNarrowedByRequest: RFC 9396 requests at the token
// endpoint narrow the token and never widen it: the password grant asking
// for ASX quotes gets exactly that, which the socket then holds it to; a
// pair the user does not hold is invalid_authorization_details; a refresh
// asking for more than its family was granted is refused, and one asking
// for nothing keeps the narrowed set.
func TestEntitlementsNarrowedByRequest(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	asx := `[{"type":"market_data","venue":"ASX","feeds":["quotes"]}]`
	grant := func(details string) (*http.Response, []byte) {
		return g.PostToken(t, url.Values{"grant_type": {"password"}, "username": {"trader"}, "password": {"trader"},
			"client_id": {publicClient}, "authorization_details": {details}}, "", "")
	}
	resp, body := grant(asx)
	var tok struct {
		tokenResponse
		Details json.RawMessage `json:"authorization_details"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil {
		t.Fatalf("password grant asking for ASX quotes: %d %s", resp.StatusCode, body)
	}
	if got, err := entitle.ParseDetails(tok.Details); err != nil || got.String() != "ASX:quotes" {
		t.Fatalf("the response's authorization_details: %s (%v), want ASX quotes alone", tok.Details, err)
	}
	c := liveSession(t, g, "narrowed", tok.AccessToken)
	subscribeSecurity(t, c, "Security!BHP.ASX", "2")
	for i, tp := range []string{"Depth!BHP.ASX", "Security!AIR.NZX"} {
		tid := strconv.Itoa(3 + i)
		if m := c.request(msg("Market", tp, "Sub", tid), tid); !m.isError(tid, "Authority") {
			t.Fatalf("%s with a token narrowed to ASX quotes: %s", tp, m)
		}
	}
	resp, body = grant(`[{"type":"market_data","venue":"NZX","feeds":["depth"]}]`)
	if resp.StatusCode != http.StatusBadRequest || decodeError(t, resp, body).Error != "invalid_authorization_details" {
		t.Fatalf("asking for a pair trader does not hold: %d %s", resp.StatusCode, body)
	}
	refresh := func(details string) (*http.Response, []byte) {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {publicClient}}
		if details != "" {
			form.Set("authorization_details", details)
		}
		return g.PostToken(t, form, "", "")
	}
	resp, body = refresh(`[{"type":"market_data","venue":"ASX","feeds":["quotes","depth"]}]`)
	if resp.StatusCode != http.StatusBadRequest || decodeError(t, resp, body).Error != "invalid_authorization_details" {
		t.Fatalf("a refresh asking for more than its family: %d %s", resp.StatusCode, body)
	}
	resp, body = refresh("")
	var next struct {
		Details json.RawMessage `json:"authorization_details"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &next) != nil {
		t.Fatalf("a refresh: %d %s", resp.StatusCode, body)
	}
	if got, err := entitle.ParseDetails(next.Details); err != nil || got.String() != "ASX:quotes" {
		t.Fatalf("the refreshed authorization_details: %s (%v), want ASX quotes alone", next.Details, err)
	}
}

// TestEntitlementChangeAcrossInstances: two instances on one PostgreSQL
// store; trader's socket on B holds an NZX and an ASX subscription, and
// NZX:quotes is taken from him through A's command line: B ends the NZX
// subscription alone (its backend's count of NZX subscriptions falls to 0)
// within the bound of a notified revocation, and the ASX one keeps
// flowing.
func TestEntitlementChangeAcrossInstances(t *testing.T) {
	t.Parallel()
	a, b := startPair(t, multiConfig(t, "multi-entitlements", true), freshDatabase(t))
	tok := a.PasswordGrant(t, "trader", "trader")
	c := liveSession(t, b, "trader on B", tok.AccessToken)
	subscribeSecurity(t, c, "Security!BHP.ASX", "2")
	subscribeSecurity(t, c, "Security!AIR.NZX", "3")
	statsBecome(t, b, map[string]int{"ASX/Security": 1, "NZX/Security": 1})
	mark := c.mark()
	start := time.Now()
	runCLI(t, a, "user", "unentitle", "trader", "NZX:quotes")
	m := c.next("the server Unsub of Security!AIR.NZX", notifiedBound+wsTimeout, func(m *liveMsg) bool {
		return m.Topic == "Security!AIR.NZX" && m.Action == "Unsub" && m.Confirm
	})
	if took := m.at.Sub(start); took > notifiedBound+2*time.Second {
		t.Errorf("B ended the NZX subscription %v after the change (the command's own start included), want within %v", took, notifiedBound)
	}
	statsBecome(t, b, map[string]int{"ASX/Security": 1, "NZX/Security": 0})
	c.next("an update of Security!BHP.ASX after the change", wsTimeout, func(m *liveMsg) bool { return m.update("Security!BHP.ASX") })
	for _, m := range c.since(mark) {
		if m.Topic == "Security!BHP.ASX" && (m.Action == "Unsub" || m.Action == "Error") {
			t.Fatalf("the ASX subscription was touched: %s", m)
		}
	}
}
