package integration

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The live sessions of the message gateway (docs/security.md, "How tokens and
// revocation reach live sessions") through the real
// binary, the demo config or a variant of it, and gorilla/websocket:
// re-authentication, scope shrink, the limits, a reserved TransactionID
// and require_tls here; expiry and revocation in ws_live_lapse_test.go;
// the original web client's profile in ws_motif_test.go. The sockets are
// read as client_live_test.go has it.

// liveSession opens the demo's /ws (ServiceJson, version 1.1) and
// authenticates it with an AuthToken message carrying token
// (TransactionID 1).
func liveSession(t *testing.T, g *Gatehouse, name, token string) *liveConn {
	t.Helper()
	c, resp, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", "")
	if err != nil {
		t.Fatalf("%s: dial: %v (%v)", name, err, resp)
	}
	l := watch(t, name, c)
	if m := l.request(authTokenMsg("1", token), "1"); identify(t, m).Result != "Success" {
		t.Fatalf("%s: AuthToken: %s", name, m)
	}
	return l
}

// subscribeSecurity subscribes l to topic (Market, Security!<code>.ASX)
// with TransactionID tid and waits for the confirmation and the snapshot.
func subscribeSecurity(t *testing.T, l *liveConn, topic, tid string) {
	t.Helper()
	if m := l.request(msg("Market", topic, "Sub", tid), tid); m.Action != "Sub" || !m.Confirm {
		t.Fatalf("%s: Sub %s: %s, want its confirmation", l.name, topic, m)
	}
	l.next("the snapshot of "+topic, wsTimeout, func(m *liveMsg) bool { return m.update(topic) })
}

// refreshWithScope refreshes through demo-app asking for scope (RFC 6749
// §6: at most the original grant's) and requires success.
func refreshWithScope(t *testing.T, g *Gatehouse, refreshToken, scope string) tokenResponse {
	t.Helper()
	resp, body := g.PostToken(t, url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {refreshToken},
		"client_id":     {publicClient},
		"scope":         {scope},
	}, "", "")
	return decodeToken(t, resp, body)
}

// index is the position in ms of the first message that matches, or -1.
func index(ms []*liveMsg, match func(*liveMsg) bool) int {
	return slices.IndexFunc(ms, match)
}

// TestLiveReauthentication re-authenticates a live session of the demo's
// /ws: a refreshed token of the same user (narrowed to Service/Market)
// replaces the expiry and the scopes (the reply and QueryIdentify show the
// new ExpiryDate; a News message forwarded before is refused after), the
// Identify subscriber gets a push after the reply, and the Market
// subscription goes on without being sent again; then the trader's token
// on the demo user's session is refused (Reject, no push) and the session
// is as it was. The re-authentication is counted and audited.
func TestLiveReauthentication(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	demoID := subjectOf(t, "demo")
	first := g.PasswordGrant(t, "demo", "demo")
	trader := g.PasswordGrant(t, "trader", "trader")
	const bhp = "Security!BHP.ASX"

	c := liveSession(t, g, "demo", first.AccessToken)
	sub := c.request(`{"Controller":"Auth","Topic":"Identify","Action":"Sub","TransactionID":2}`, "2")
	if d := identify(t, sub); sub.Action != "Sub" || !sub.Confirm || d.Result != "Success" || d.UserID != demoID {
		t.Fatalf("Identify Sub: %s, want Action Sub, Confirm true, demo's identity", sub)
	}
	subscribeSecurity(t, c, bhp, "3")
	// demo's first token holds Service/News: the backend answers (it
	// serves no News topic), not the gateway.
	if m := c.request(msg("News", "QueryNews", "Publish", "4"), "4"); m.errorCode() != "Operation.Unknown" {
		t.Fatalf("QueryNews with Service/News: %s, want the backend's Operation.Unknown", m)
	}

	// exp has whole seconds: refresh in a later second than the first
	// grant, so that the new token expires later.
	_, claims := decodeJWT(t, first.AccessToken)
	time.Sleep(time.Until(time.Unix(int64(claims["iat"].(float64))+1, 0)))
	second := refreshWithScope(t, g, first.RefreshToken, "openid offline_access Service/Market")
	newExpiry := zenithDateTime(tokenExpiry(t, second.AccessToken))
	if old := zenithDateTime(tokenExpiry(t, first.AccessToken)); old >= newExpiry {
		t.Fatalf("the refreshed token expires %s, the first %s: want later", newExpiry, old)
	}

	mark := c.mark()
	c.send(authTokenMsg("5", second.AccessToken))
	taken := c.until("the Identify push after the re-authentication", wsTimeout, (*liveMsg).identifyPush)
	at := index(taken, func(m *liveMsg) bool { return m.tid() == "5" })
	if at < 0 {
		t.Fatalf("the Identify push came before the reply to AuthToken: %s", taken[len(taken)-1])
	}
	reply, push := taken[at], taken[len(taken)-1]
	for what, m := range map[string]*liveMsg{"reply": reply, "push": push} {
		d := identify(t, m)
		if m.Topic != "Identify" || d.Result != "Success" || d.UserID != demoID || d.ExpiryDate != newExpiry ||
			!d.hasScope("Market") || d.hasScope("News") {
			t.Errorf("the re-authentication's %s: %s, want Success, ExpiryDate %s, Market and not News", what, m, newExpiry)
		}
	}
	q := c.request(`{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":6}`, "6")
	if d := identify(t, q); d.Result != "Success" || d.ExpiryDate != newExpiry || d.hasScope("News") {
		t.Fatalf("QueryIdentify after the re-authentication: %s, want ExpiryDate %s without News", q, newExpiry)
	}
	if m := c.request(msg("News", "QueryNews", "Publish", "7"), "7"); !m.isError("7", "Authority") {
		t.Fatalf("QueryNews without Service/News: %s, want Error Authority", m)
	}
	// The subscription holds: updates go on, and the backend was not sent
	// the Sub again (it would have confirmed it, TransactionID 3).
	c.next("an update after the re-authentication", wsTimeout, func(m *liveMsg) bool { return m.update(bhp) })
	if i := index(c.since(mark), func(m *liveMsg) bool { return m.tid() == "3" || snapshot(m, bhp) }); i >= 0 {
		t.Fatalf("the Sub was answered again after a re-authentication of a live session: %s", c.since(mark)[i])
	}

	// Another user's token: refused, and the session is demo's still.
	if m := c.request(authTokenMsg("8", trader.AccessToken), "8"); m.Topic != "Identify" || identify(t, m).Result != "Reject" || identify(t, m).UserID != "" {
		t.Fatalf("the trader's token on demo's session: %s, want Identify Reject", m)
	}
	mark = c.mark()
	c.send(`{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":9}`)
	taken = c.until("the answer to QueryIdentify", wsTimeout, func(m *liveMsg) bool { return m.tid() == "9" })
	if d := identify(t, taken[len(taken)-1]); d.Result != "Success" || d.UserID != demoID || d.ExpiryDate != newExpiry || d.hasScope("Trading") {
		t.Fatalf("QueryIdentify after the refused token: %s, want demo's identity as it was", taken[len(taken)-1])
	}
	if m := c.request(msg("Trading", "QueryAccounts", "Publish", "10"), "10"); !m.isError("10", "Authority") {
		t.Fatalf("QueryAccounts after the trader's token was refused: %s, want Error Authority", m)
	}
	if m := c.request(msg("Market", "QueryMarkets", "Publish", "11"), "11"); m.Action == "Error" {
		t.Fatalf("QueryMarkets after the refused token: %s", m)
	}
	c.next("an update after the refused token", wsTimeout, func(m *liveMsg) bool { return m.update(bhp) })
	if i := index(c.since(mark), (*liveMsg).identifyPush); i >= 0 {
		t.Fatalf("an Identify push after a refused re-authentication: %s", c.since(mark)[i])
	}

	metrics := scrapeMetrics(t, g)
	for series, want := range map[string]float64{
		"gatehouse_ws_reauthentications_total":                          1,
		`gatehouse_ws_auth_total{method="auth_token",result="success"}`: 2,
		`gatehouse_ws_auth_total{method="auth_token",result="reject"}`:  1,
		`gatehouse_ws_subscriptions{controller="Market"}`:               1,
		`gatehouse_ws_sessions{state="authenticated"}`:                  1,
		`gatehouse_ws_messages_denied_total{controller="Trading"}`:      1,
		`gatehouse_ws_messages_relayed_total{controller="News"}`:        1,
		`gatehouse_ws_messages_denied_total{controller="News"}`:         1,
	} {
		if got := metricValue(metrics, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if n := countEntries(logEntries(t, g, "ws reauthentication"), map[string]any{"user": demoID, "client_id": publicClient, "was_lapsed": false}); n != 1 {
		t.Errorf("%d audit entries \"ws reauthentication\" for demo, want 1", n)
	}
	if n := countEntries(logEntries(t, g, "ws authentication"), map[string]any{"result": "reject", "reason": "another subject than the session's", "session_user": demoID}); n != 1 {
		t.Errorf("%d audit entries for the refused token of another user, want 1", n)
	}
}

// TestLiveReservedTransactionID: a client message whose TransactionID
// begins with the gateway's reserved digits (9007199254, negative too) is
// refused with Error Session and not forwarded, on the demo's /ws; one
// just below the range is forwarded; one past 2^53 - 1 is refused with
// Error Data.Deserialise (no TransactionID: it is not read).
func TestLiveReservedTransactionID(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	c := liveSession(t, g, "demo", g.PasswordGrant(t, "demo", "demo").AccessToken)
	for _, tid := range []string{"9007199254000000", "9007199254740991", "-9007199254000001"} {
		if m := c.request(msg("Zenith", "ServerInfo", "Publish", tid), tid); !m.isError(tid, "Session") || m.Controller != "Zenith" || m.Topic != "ServerInfo" {
			t.Errorf("ServerInfo with TransactionID %s: %s, want Error Session", tid, m)
		}
		// Not forwarded: the backend would answer a Sub with its
		// confirmation and a snapshot before the next answer.
		c.send(msg("Market", "Security!CBA.ASX", "Sub", tid))
		c.send(msg("Market", "QueryMarkets", "Publish", "2"))
		taken := c.until("the answer to QueryMarkets", wsTimeout, func(m *liveMsg) bool { return m.tid() == "2" })
		if len(taken) != 2 || !taken[0].isError(tid, "Session") || taken[1].Action == "Error" {
			t.Errorf("Sub with TransactionID %s, then QueryMarkets: %q, want Error Session, then the answer to QueryMarkets", tid, taken)
		}
	}
	if m := c.request(msg("Zenith", "ServerInfo", "Publish", "9007199253999999"), "9007199253999999"); m.Action == "Error" {
		t.Fatalf("ServerInfo with TransactionID 9007199253999999 (below the range): %s", m)
	}
	c.send(msg("Market", "Security!CBA.ASX", "Sub", "9007199254999999999"))
	c.send(msg("Market", "QueryMarkets", "Publish", "3"))
	taken := c.until("the answer to QueryMarkets", wsTimeout, func(m *liveMsg) bool { return m.tid() == "3" })
	if len(taken) != 2 || !taken[0].isError("", "Data.Deserialise") || taken[1].Action == "Error" {
		t.Errorf("Sub with TransactionID 9007199254999999999, then QueryMarkets: %q, want Error Data.Deserialise, then the answer", taken)
	}
}

// TestLiveRequireTLS runs the demo with require_tls on /ws, whose
// connections are plain HTTP: the trader's identity there lacks Trading
// and OrderPad and their messages are refused, while the demo's /Zenith
// (no require_tls) still grants them. The TLS side (a connection over TLS
// keeps them) is TestGatewayRequireTLS in caddymodule/wshandler, whose
// site runs in-process over real TLS.
func TestLiveRequireTLS(t *testing.T) {
	t.Parallel()
	g := StartGatehouseWith(t, Options{Config: wsConfig(t, "ws-require-tls", "require_tls")})
	trader := g.TradingToken(t)

	c := liveSession(t, g, "trader on /ws", trader.AccessToken)
	q := c.request(`{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":2}`, "2")
	if d := identify(t, q); d.Result != "Success" || !d.hasScope("Market") || !d.hasScope("News") || d.hasScope("Trading") || d.hasScope("OrderPad") {
		t.Fatalf("QueryIdentify without TLS: %s, want Market and News but neither Trading nor OrderPad", q)
	}
	for i, topic := range []string{"QueryAccounts", "PlaceOrder"} {
		tid := strconv.Itoa(3 + i)
		if m := c.request(msg("Trading", topic, "Publish", tid), tid); !m.isError(tid, "Authority") {
			t.Errorf("Trading %s without TLS: %s, want Error Authority", topic, m)
		}
	}
	if m := c.request(msg("Market", "QueryMarkets", "Publish", "5"), "5"); m.Action == "Error" {
		t.Fatalf("QueryMarkets without TLS: %s", m)
	}

	// The same token on the gateway without require_tls.
	zc, resp, err := dialWS(t, g, "/Zenith?version=2.0", "ZenithJson", trader.AccessToken)
	if err != nil {
		t.Fatalf("dial /Zenith: %v (%v)", err, resp)
	}
	z := watch(t, "trader on /Zenith", zc)
	if m := z.request(msg("Trading", "QueryAccounts", "Publish", "6"), "6"); m.Action == "Error" || !strings.Contains(string(m.Data), `"ID":`) {
		t.Fatalf("QueryAccounts on /Zenith: %s, want the trader's accounts", m)
	}
}

// TestLiveScopeShrink re-authenticates the trader's live session of the
// demo's /ws with a token of narrower scope (Service/Market without
// Trading), got by a refresh asking for less and by a password grant
// asking for less, while it holds a Trading and a Market subscription. The
// client gets the reply, then Error Authority for the Trading
// subscription and a server Unsub of it with Confirm true, both with the
// Sub's TransactionID; the Market feed goes on untouched (not ended, not
// subscribed again). The gateway's own Unsub
// reaches the backend, whose answer (it serves no Trading subscription:
// Operation.Unknown, with the gateway's reserved TransactionID) never
// reaches the client.
func TestLiveScopeShrink(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	traderID := subjectOf(t, "trader")
	const bhp = "Security!BHP.ASX"
	narrowScope := "openid offline_access Service/Market"
	for _, tc := range []struct {
		name   string
		narrow func(t *testing.T, tok tokenResponse) tokenResponse
	}{
		{"refresh asking for less", func(t *testing.T, tok tokenResponse) tokenResponse {
			return refreshWithScope(t, g, tok.RefreshToken, narrowScope)
		}},
		{"password grant asking for less", func(t *testing.T, _ tokenResponse) tokenResponse {
			resp, body := g.PostToken(t, url.Values{
				"grant_type": {"password"}, "username": {"trader"}, "password": {"trader"},
				"client_id": {publicClient}, "scope": {narrowScope},
			}, "", "")
			return decodeToken(t, resp, body)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := g.TradingToken(t)
			c := liveSession(t, g, tc.name, tok.AccessToken)
			// Forwarded and tracked: the demo backend serves no Trading
			// subscription and answers it with Operation.Unknown.
			if m := c.request(msg("Trading", "Orders", "Sub", "2"), "2"); m.errorCode() != "Operation.Unknown" {
				t.Fatalf("Trading Orders Sub: %s, want the backend's answer", m)
			}
			subscribeSecurity(t, c, bhp, "3")
			metricBecomes(t, g, `gatehouse_ws_subscriptions{controller="Trading"}`, 1)

			narrow := tc.narrow(t, tok)
			if !sameScopes(narrow.Scope, strings.Fields(narrowScope)) {
				t.Fatalf("the narrower token's scope: %q, want %q", narrow.Scope, narrowScope)
			}
			mark := c.mark()
			c.send(authTokenMsg("4", narrow.AccessToken))
			orders := func(m *liveMsg) bool { return m.Controller == "Trading" && m.Topic == "Orders" }
			taken := c.until("the server Unsub of Trading Orders", wsTimeout, func(m *liveMsg) bool { return orders(m) && m.Action == "Unsub" })
			reply := index(taken, func(m *liveMsg) bool { return m.tid() == "4" })
			denial := index(taken, func(m *liveMsg) bool { return orders(m) && m.isError("2", "Authority") })
			unsub := taken[len(taken)-1]
			if reply < 0 || denial < reply || !unsub.Confirm || unsub.tid() != "2" {
				t.Fatalf("after the narrower token: %q, want the reply, Error Authority, then Unsub with Confirm true, both TransactionID 2", taken)
			}
			if d := identify(t, taken[reply]); d.Result != "Success" || d.UserID != traderID || d.hasScope("Trading") || !d.hasScope("Market") {
				t.Fatalf("the reply to the narrower token: %s", taken[reply])
			}
			if m := c.request(msg("Trading", "QueryAccounts", "Publish", "5"), "5"); !m.isError("5", "Authority") {
				t.Fatalf("QueryAccounts after the scope shrink: %s, want Error Authority", m)
			}
			// Forwarded after the gateway's Unsub: the backend answers in
			// order, so its answer to that Unsub came before this one.
			if m := c.request(msg("Market", "QueryMarkets", "Publish", "6"), "6"); m.Action == "Error" {
				t.Fatalf("QueryMarkets after the scope shrink: %s", m)
			}
			c.next("an update after the scope shrink", wsTimeout, func(m *liveMsg) bool { return m.update(bhp) })
			if i := index(c.since(mark), func(m *liveMsg) bool {
				return m.Controller == "Market" && (m.Action == "Unsub" || m.Action == "Error" || m.tid() == "3" || snapshot(m, bhp))
			}); i >= 0 {
				t.Fatalf("the Market subscription was touched by the scope shrink: %s", c.since(mark)[i])
			}
			if n := c.reservedSeen(); n != 0 {
				t.Fatalf("%d messages with a reserved TransactionID reached the client", n)
			}
			metricBecomes(t, g, `gatehouse_ws_subscriptions{controller="Trading"}`, 0)
			metricBecomes(t, g, `gatehouse_ws_subscriptions{controller="Market"}`, 1)
		})
	}
	if n := countEntries(logEntries(t, g, "ws reauthentication"), map[string]any{"user": traderID, "subscriptions_ended": 1.0}); n != 2 {
		t.Errorf("%d audit entries of a re-authentication ending a subscription, want 2", n)
	}
}

// TestLiveLimits runs the demo with limits { subscriptions 2;
// messages_per_second 5; burst 5 } on /ws: a third subscription gets
// Error Limited and is not forwarded (an Unsub makes room again), and a
// burst over the rate gets Error Limited for what is over it, none of it
// forwarded; both counted by kind.
func TestLiveLimits(t *testing.T) {
	t.Parallel()
	g := StartGatehouseWith(t, Options{Config: wsConfig(t, "ws-limits",
		"limits {", "\tsubscriptions 2", "\tmessages_per_second 5", "\tburst 5", "}")})
	tok := g.PasswordGrant(t, "demo", "demo")

	t.Run("subscriptions", func(t *testing.T) {
		c := liveSession(t, g, "subscriptions", tok.AccessToken)
		subscribeSecurity(t, c, "Security!BHP.ASX", "2")
		subscribeSecurity(t, c, "Security!CBA.ASX", "3")
		// Had the third Sub been forwarded, the backend would have
		// confirmed it before answering QueryMarkets.
		c.send(msg("Market", "Security!CSL.ASX", "Sub", "4"))
		c.send(msg("Market", "QueryMarkets", "Publish", "5"))
		taken := c.until("the answer to QueryMarkets", wsTimeout, func(m *liveMsg) bool { return m.tid() == "5" })
		csl := func(m *liveMsg) bool { return m.Topic == "Security!CSL.ASX" }
		if i := index(taken, csl); i < 0 || !taken[i].isError("4", "Limited") || index(taken[i+1:], csl) >= 0 || taken[len(taken)-1].Action == "Error" {
			t.Fatalf("a third Sub, then QueryMarkets: %q, want Error Limited for the Sub alone, then the answer", taken)
		}
		metricBecomes(t, g, `gatehouse_ws_subscriptions{controller="Market"}`, 2)
		// Four messages of the burst of five are spent: wait for the
		// bucket to refill (5 per second) before the next ones.
		time.Sleep(time.Second)
		if m := c.request(`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Unsub","TransactionID":6,"Confirm":true}`, "6"); m.Action != "Unsub" || !m.Confirm {
			t.Fatalf("Unsub: %s, want its confirmation", m)
		}
		subscribeSecurity(t, c, "Security!CSL.ASX", "7")
	})

	t.Run("rate", func(t *testing.T) {
		c := liveSession(t, g, "rate", tok.AccessToken)
		const n = 15
		for i := 1; i <= n; i++ {
			c.send(msg("Zenith", "ServerInfo", "Publish", strconv.Itoa(i)))
		}
		answers := map[string]*liveMsg{}
		c.until("the answers to the burst", wsTimeout, func(m *liveMsg) bool {
			if old, ok := answers[m.tid()]; ok {
				t.Fatalf("TransactionID %s answered twice: %s and %s", m.tid(), old, m)
			}
			answers[m.tid()] = m
			return len(answers) == n
		})
		limited := 0
		for i := 1; i <= n; i++ {
			tid := strconv.Itoa(i)
			switch m := answers[tid]; {
			case m == nil:
				t.Fatalf("no answer to TransactionID %s", tid)
			case m.isError(tid, "Limited"):
				limited++
				if i <= 5 {
					t.Errorf("message %d of a burst of 5 limited: %s", i, m)
				}
			case m.Action == "Error" || m.Topic != "ServerInfo":
				t.Errorf("message %d: %s, want the backend's ServerInfo or Error Limited", i, m)
			}
		}
		if limited < 5 {
			t.Fatalf("%d of %d messages sent at once limited, want at least 5 over the burst of 5", limited, n)
		}
		// None of the limited ones was forwarded: after the bucket
		// refills, the next answer is the only one.
		time.Sleep(time.Second)
		c.send(msg("Zenith", "ServerInfo", "Publish", "100"))
		if taken := c.until("the answer after the burst", wsTimeout, func(m *liveMsg) bool { return m.tid() == "100" }); len(taken) != 1 || taken[0].Action == "Error" {
			t.Fatalf("after the burst: %q, want only the answer to ServerInfo", taken)
		}
		metrics := scrapeMetrics(t, g)
		for series, want := range map[string]float64{
			`gatehouse_ws_limited_total{kind="rate"}`:          float64(limited),
			`gatehouse_ws_limited_total{kind="subscriptions"}`: 1,
		} {
			if got := metricValue(metrics, series); got != want {
				t.Errorf("%s = %v, want %v", series, got, want)
			}
		}
	})
}
