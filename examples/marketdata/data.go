package marketdata

import "time"

// The payloads of the static topics, in the original platform's member
// names (its open client's protocol definitions).

// ServerInfo identifies the server.
const (
	serverName    = "gatehouse-demo-marketdata"
	serverClass   = "Demo"
	serverVersion = "1.0"
)

// tradingFeed is the name of the demo's trading feed: the Provider of
// every account.
const tradingFeed = "Motif"

type serverInfoData struct {
	Name     string `json:"Name"`
	Class    string `json:"Class"`
	Version  string `json:"Version"`
	Protocol string `json:"Protocol"` // the ?version= of the upgrade
}

func (c *conn) serverInfo() serverInfoData {
	return serverInfoData{Name: serverName, Class: serverClass, Version: serverVersion, Protocol: c.version}
}

type feedData struct {
	Name   string `json:"Name"`
	Class  string `json:"Class"`
	Status string `json:"Status"`
}

// feeds are a Market feed per venue, the news of the first venue, and
// the trading feed.
func feeds() []feedData {
	out := make([]feedData, 0, len(demoVenues)+2)
	for _, v := range demoVenues {
		out = append(out, feedData{Name: v.code, Class: "Market", Status: "Active"})
	}
	return append(out,
		feedData{Name: demoVenues[0].code, Class: "News", Status: "Active"},
		feedData{Name: tradingFeed, Class: "Trading", Status: "Active"})
}

type marketData struct {
	Code        string       `json:"Code"`
	Feed        string       `json:"Feed"`
	TradingDate string       `json:"TradingDate"` // YYYY-MM-DD
	MarketTime  string       `json:"MarketTime"`  // Zenith DateTime
	Status      string       `json:"Status"`
	States      []boardState `json:"States"`
}

type boardState struct {
	Name   string `json:"Name"`
	Status string `json:"Status"`
}

// markets are the demo markets, each open at the configured clock's time.
func (c *conn) markets() []marketData {
	now := c.s.cfg.Now().UTC()
	out := make([]marketData, 0, len(demoVenues))
	for _, v := range demoVenues {
		out = append(out, marketData{
			Code: v.code, Feed: "Active",
			TradingDate: now.Format(time.DateOnly),
			MarketTime:  zenithDateTime(now),
			Status:      "Open",
			States:      []boardState{{Name: v.code, Status: "Open"}},
		})
	}
	return out
}

// zenithDateTime formats t as a Zenith DateTime: ISO 8601 basic form in
// UTC, e.g. 20261121T103000Z, with milliseconds when t has any.
func zenithDateTime(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/int(time.Millisecond) != 0 {
		return t.Format("20060102T150405.000Z")
	}
	return t.Format("20060102T150405Z")
}

type accountData struct {
	ID       string `json:"ID"`
	Name     string `json:"Name"`
	Feed     string `json:"Feed"`
	Provider string `json:"Provider"`
	Currency string `json:"Currency"`
}

// accounts are the connection's user's accounts; none (an empty list)
// for a user the configuration does not know.
func (c *conn) accounts() []accountData {
	list := c.s.cfg.Accounts[c.user]
	out := make([]accountData, 0, len(list))
	for _, a := range list {
		out = append(out, accountData{ID: a.ID, Name: a.Name, Feed: "Active", Provider: tradingFeed, Currency: a.Currency})
	}
	return out
}
