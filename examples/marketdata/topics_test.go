package marketdata

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestServerInfo(t *testing.T) {
	_, srv := start(t, testConfig())
	want := serverInfoData{Name: serverName, Class: serverClass, Version: serverVersion, Protocol: "2.0"}
	c := dialWith(t, wsURL(srv, "?version=2.0"), nil, &websocket.Dialer{Subprotocols: []string{SubprotocolZenith}})
	if got := c.ws.Subprotocol(); got != SubprotocolZenith {
		t.Errorf("sub-protocol %q, want %q", got, SubprotocolZenith)
	}

	t.Run("publish", func(t *testing.T) {
		c.t = t
		c.send(`{"Controller":"Zenith","Topic":"ServerInfo","TransactionID":3}`)
		m := c.next()
		if m.Controller != "Zenith" || m.Topic != "ServerInfo" || m.Action != actionPublish ||
			m.TransactionID == nil || *m.TransactionID != 3 {
			t.Fatalf("got %s", m.raw)
		}
		var got serverInfoData
		m.data(t, &got)
		if got != want {
			t.Errorf("Data %+v, want %+v", got, want)
		}
	})
	t.Run("default controller", func(t *testing.T) {
		c.t = t
		c.send(`{"Topic":"ServerInfo","TransactionID":4}`)
		if m := c.next(); m.Controller != "Zenith" || m.Action != actionPublish || *m.TransactionID != 4 {
			t.Fatalf("got %s", m.raw)
		}
	})
	t.Run("sub", func(t *testing.T) {
		c.t = t
		c.send(`{"Controller":"Zenith","Topic":"ServerInfo","Action":"Sub","Confirm":true}`)
		if m := c.next(); m.Action != actionSub || !m.Confirm || m.Data != nil || m.TransactionID != nil {
			t.Fatalf("got %s, want the Sub confirmation", m.raw)
		}
		m := c.next()
		if m.Topic != "ServerInfo" || m.Action != actionSub || m.Confirm || m.TransactionID != nil {
			t.Fatalf("got %s, want the data", m.raw)
		}
		var got serverInfoData
		m.data(t, &got)
		if got != want {
			t.Errorf("Data %+v, want %+v", got, want)
		}
	})
	t.Run("default version", func(t *testing.T) {
		c := dialWith(t, wsURL(srv, ""), nil, &websocket.Dialer{})
		if got := c.ws.Subprotocol(); got != "" {
			t.Errorf("sub-protocol %q, none offered", got)
		}
		c.send(`{"Topic":"ServerInfo"}`)
		var got serverInfoData
		c.next().data(t, &got)
		if got.Protocol != defaultVersion {
			t.Errorf("Protocol %q, want %q", got.Protocol, defaultVersion)
		}
	})
}

// TestSubscriptions checks the static subscriptions: confirmation (with
// the request's TransactionID), then the data without one.
func TestSubscriptions(t *testing.T) {
	_, srv := start(t, testConfig())
	c := dial(t, srv, "")
	wantMarkets := []marketData{
		{Code: "ASX", Feed: "Active", TradingDate: "2026-11-21", MarketTime: "20261121T103000Z",
			Status: "Open", States: []boardState{{Name: "ASX", Status: "Open"}}},
		{Code: "NZX", Feed: "Active", TradingDate: "2026-11-21", MarketTime: "20261121T103000Z",
			Status: "Open", States: []boardState{{Name: "NZX", Status: "Open"}}},
	}
	tests := []struct {
		controller, topic string
		got, want         any
	}{
		{"Zenith", "Feeds", &[]feedData{}, &[]feedData{
			{Name: "ASX", Class: "Market", Status: "Active"},
			{Name: "NZX", Class: "Market", Status: "Active"},
			{Name: "ASX", Class: "News", Status: "Active"},
			{Name: "Motif", Class: "Trading", Status: "Active"},
		}},
		{"Market", "Markets", &[]marketData{}, &wantMarkets},
	}
	for _, tt := range tests {
		t.Run(tt.topic, func(t *testing.T) {
			c.t = t
			c.send(`{"Controller":"` + tt.controller + `","Topic":"` + tt.topic + `","Action":"Sub","TransactionID":11,"Confirm":true}`)
			m := c.next()
			if m.Controller != tt.controller || m.Topic != tt.topic || m.Action != actionSub || !m.Confirm ||
				m.TransactionID == nil || *m.TransactionID != 11 || m.Data != nil {
				t.Fatalf("got %s, want the Sub confirmation", m.raw)
			}
			m = c.next()
			if m.Controller != tt.controller || m.Topic != tt.topic || m.Action != actionSub || m.Confirm || m.TransactionID != nil {
				t.Fatalf("got %s, want the data", m.raw)
			}
			m.data(t, tt.got)
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("Data %+v, want %+v", tt.got, tt.want)
			}

			c.send(`{"Controller":"` + tt.controller + `","Topic":"` + tt.topic + `","Action":"Unsub","TransactionID":12,"Confirm":true}`)
			m = c.next()
			if m.Topic != tt.topic || m.Action != actionUnsub || !m.Confirm || *m.TransactionID != 12 {
				t.Fatalf("got %s, want the Unsub confirmation", m.raw)
			}
			// An Unsub that does not ask for a confirmation gets none:
			// the next message answers the query after it.
			c.send(`{"Controller":"` + tt.controller + `","Topic":"` + tt.topic + `","Action":"Unsub"}`)
			c.send(`{"Topic":"ServerInfo","TransactionID":13}`)
			if m := c.next(); m.Topic != "ServerInfo" {
				t.Fatalf("got %s, want the ServerInfo reply", m.raw)
			}
		})
	}

	t.Run("QueryMarkets", func(t *testing.T) {
		c.t = t
		c.send(`{"Controller":"Market","Topic":"QueryMarkets","TransactionID":21}`)
		m := c.next()
		if m.Controller != "Market" || m.Topic != "QueryMarkets" || m.Action != actionPublish || *m.TransactionID != 21 {
			t.Fatalf("got %s", m.raw)
		}
		var got []marketData
		m.data(t, &got)
		if !reflect.DeepEqual(got, wantMarkets) {
			t.Errorf("Data %+v, want %+v", got, wantMarkets)
		}
	})
}

func TestQueryAccounts(t *testing.T) {
	demo := DemoAccounts()
	tests := []struct {
		name   string
		header string // the user header's name in the config; "" for the default
		user   string
		want   []Account
	}{
		{"trader", "", DemoTraderSubject, demo[DemoTraderSubject]},
		{"demo", "", DemoUserSubject, demo[DemoUserSubject]},
		{"unknown user", "", "someone-else", []Account{}},
		{"configured header", "X-Auth-User", DemoTraderSubject, demo[DemoTraderSubject]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.UserIDHeader = tt.header
			_, srv := start(t, cfg)
			header := tt.header
			if header == "" {
				header = DefaultUserIDHeader
			}
			c := dialWith(t, wsURL(srv, ""), http.Header{header: {tt.user}}, &websocket.Dialer{})
			c.send(`{"Controller":"Trading","Topic":"QueryAccounts","TransactionID":5}`)
			m := c.next()
			if m.Controller != "Trading" || m.Topic != "QueryAccounts" || m.Action != actionPublish || *m.TransactionID != 5 {
				t.Fatalf("got %s", m.raw)
			}
			var got []accountData
			m.data(t, &got)
			if len(got) != len(tt.want) {
				t.Fatalf("got %s, want %d accounts", m.raw, len(tt.want))
			}
			for i, a := range tt.want {
				want := accountData{ID: a.ID, Name: a.Name, Feed: "Active", Provider: tradingFeed, Currency: a.Currency}
				if got[i] != want {
					t.Errorf("account %d: %+v, want %+v", i, got[i], want)
				}
			}
		})
	}

	t.Run("no user header", func(t *testing.T) {
		cfg := testConfig()
		cfg.UserIDHeader = "X-Auth-User"
		_, srv := start(t, cfg)
		// The default header does not count once another is configured.
		c := dial(t, srv, DemoTraderSubject)
		c.send(`{"Controller":"Trading","Topic":"QueryAccounts","TransactionID":6}`)
		m := c.next()
		if code := m.errorCode(t); code != errAuthority || m.Controller != "Trading" || m.Topic != "QueryAccounts" || *m.TransactionID != 6 {
			t.Fatalf("got %s, want Error Authority", m.raw)
		}
	})
}

// TestErrors checks the Error replies: each echoes the request's
// Controller, Topic and TransactionID, and the connection stays open.
func TestErrors(t *testing.T) {
	_, srv := start(t, testConfig())
	c := dial(t, srv, DemoTraderSubject)
	tests := []struct {
		name, msg  string
		controller string
		topic      string
		id         *int64
		code       string
	}{
		{"unknown topic", `{"Controller":"Market","Topic":"Levels!BHP.ASX","Action":"Sub","TransactionID":1}`,
			"Market", "Levels!BHP.ASX", int64p(1), errUnknown},
		{"unknown trading topic", `{"Controller":"Trading","Topic":"PlaceOrder","TransactionID":2,"Data":{"Account":"TRD-200001"}}`,
			"Trading", "PlaceOrder", int64p(2), errUnknown},
		{"unknown controller", `{"Controller":"Nope","Topic":"ServerInfo","TransactionID":3}`,
			"Nope", "ServerInfo", int64p(3), errController},
		{"controller in another case", `{"Controller":"market","Topic":"QueryMarkets","TransactionID":4}`,
			"market", "QueryMarkets", int64p(4), errController},
		{"topic in another case", `{"Controller":"Market","Topic":"querymarkets","TransactionID":5}`,
			"Market", "querymarkets", int64p(5), errUnknown},
		{"auth is the gateway's", `{"Controller":"Auth","Topic":"AuthToken","TransactionID":6,"Data":{"Provider":"Bearer","AccessToken":"x"}}`,
			"Auth", "AuthToken", int64p(6), errUnknown},
		{"no topic", `{"Controller":"Market"}`, "Market", "", nil, errUnknown},
		{"unknown action", `{"Controller":"Market","Topic":"QueryMarkets","Action":"Get","TransactionID":7}`,
			"Market", "QueryMarkets", int64p(7), errUnknown},
		{"client error action", `{"Controller":"Market","Topic":"QueryMarkets","Action":"Error","TransactionID":8}`,
			"Market", "QueryMarkets", int64p(8), errUnknown},
		{"publish to a subscription", `{"Controller":"Zenith","Topic":"Feeds","TransactionID":9}`,
			"Zenith", "Feeds", int64p(9), errUnknown},
		{"sub to a query", `{"Controller":"Trading","Topic":"QueryAccounts","Action":"Sub","TransactionID":10}`,
			"Trading", "QueryAccounts", int64p(10), errUnknown},
		{"publish to a security", `{"Controller":"Market","Topic":"Security!BHP.ASX","TransactionID":11}`,
			"Market", "Security!BHP.ASX", int64p(11), errUnknown},
		{"unknown symbol", `{"Controller":"Market","Topic":"Security!XYZ.ASX","Action":"Sub","TransactionID":12}`,
			"Market", "Security!XYZ.ASX", int64p(12), errNoResult},
		{"symbol in another case", `{"Controller":"Market","Topic":"Security!bhp.ASX","Action":"Sub","TransactionID":13}`,
			"Market", "Security!bhp.ASX", int64p(13), errNoResult},
		{"security without a market", `{"Controller":"Market","Topic":"Security!BHP","Action":"Sub","TransactionID":14}`,
			"Market", "Security!BHP", int64p(14), errNoResult},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			c.send(tt.msg)
			m := c.next()
			if code := m.errorCode(t); code != tt.code {
				t.Errorf("code %q, want %q", code, tt.code)
			}
			if m.Controller != tt.controller || m.Topic != tt.topic || !reflect.DeepEqual(m.TransactionID, tt.id) {
				t.Errorf("got %s, want Controller %q, Topic %q, TransactionID %v", m.raw, tt.controller, tt.topic, tt.id)
			}
		})
	}

	t.Run("cancel is not answered", func(t *testing.T) {
		c.t = t
		c.send(`{"Controller":"Market","Topic":"QueryMarkets","Action":"Cancel","TransactionID":20}`)
		c.send(`{"Topic":"ServerInfo","TransactionID":21}`)
		if m := c.next(); m.Topic != "ServerInfo" || *m.TransactionID != 21 {
			t.Fatalf("got %s, want the ServerInfo reply", m.raw)
		}
	})
	t.Run("unsub of an unknown symbol succeeds", func(t *testing.T) {
		c.t = t
		c.send(`{"Controller":"Market","Topic":"Security!XYZ.ASX","Action":"Unsub","Confirm":true}`)
		if m := c.next(); m.Action != actionUnsub || !m.Confirm || m.Topic != "Security!XYZ.ASX" {
			t.Fatalf("got %s, want the Unsub confirmation", m.raw)
		}
	})
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"bad header name", Config{UserIDHeader: "X User"}},
		{"negative tick", Config{TickInterval: -time.Second}},
		{"negative queue", Config{SendQueue: -1}},
		{"idle within the ping interval", Config{PingInterval: time.Minute, IdleTimeout: 30 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := New(tt.cfg); err == nil {
				_ = s.Close()
				t.Error("accepted")
			}
		})
	}

	t.Run("accounts are copied", func(t *testing.T) {
		accounts := map[string][]Account{"u": {{ID: "A-1", Name: "One", Currency: "AUD"}}}
		s, err := New(Config{Accounts: accounts})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		accounts["u"][0].ID = "changed"
		if got := s.cfg.Accounts["u"][0].ID; got != "A-1" {
			t.Errorf("account ID %q after the caller changed its map", got)
		}
	})
}
