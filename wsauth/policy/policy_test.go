package policy

import (
	"strings"
	"testing"
)

func TestDefaultRulesValid(t *testing.T) {
	c := Config{Rules: DefaultRules(), ReplaceDefaults: true}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultPolicy(t *testing.T) {
	all := []string{ScopeMarket, ScopeNews, ScopeTrading, ScopeOrderPad, ScopeAuthorise}
	tests := []struct {
		controller, topic string
		needs             string // "" allowed without scope; "deny" no scope allows it
	}{
		// No scope.
		{"Auth", "AuthToken", ""},
		{"Auth", "QueryIdentify", ""},
		{"Auth", "Identify", ""},
		{"Auth", "Anything!x", ""},
		{"Channel", "Whatever", ""},
		{"Market", "Configure", ""},
		{"Trading", "QueryConfigure", ""},
		{"Nonesuch", "Configure", ""},
		{"Market", "Markets", ""},
		{"Market", "QueryMarkets", ""},
		{"Market", "QueryBrokers", ""},
		{"Market", "QueryTickTables", ""},
		{"Market", "QueryTradingStates", ""},
		{"Market", "QueryMixedMarket", ""},
		{"News", "Sources", ""},
		{"News", "QuerySources", ""},
		{"Notify", "CreateScan", ""},
		{"Notify", "Scans", ""},
		{"Trading", "Accounts", ""},
		{"Trading", "TradingAccounts", ""},
		{"Trading", "QueryTradingMarkets", ""},
		{"Watchlist", "Watchlists", ""},
		{"Zenith", "Feeds", ""},
		{"Zenith", "ServerInfo", ""},
		// Market.
		{"Market", "Security!BHP.ASX", ScopeMarket},
		{"Market", "Depth!BHP.ASX", ScopeMarket},
		{"Market", "QuerySecurity", ScopeMarket},
		{"Market", "SomethingNew", ScopeMarket},
		{"Fragments", "QueryFragments", ScopeMarket},
		{"Notify", "ExecuteScan", ScopeMarket},
		{"Notify", "Matches!1", ScopeMarket},
		{"Watchlist", "Watchlist!abc", ScopeMarket},
		{"Watchlist", "CreateWatchlist", ScopeMarket},
		// News.
		{"News", "News!ASX", ScopeNews},
		{"News", "QueryNews", ScopeNews},
		// Trading.
		{"Trading", "Orders!acct", ScopeTrading},
		{"Trading", "QueryAccounts", ScopeTrading},
		{"Trading", "QueryTransactions", ScopeTrading},
		// OrderPad.
		{"Trading", "PlaceOrder", ScopeOrderPad},
		{"Trading", "AmendOrder", ScopeOrderPad},
		{"Trading", "QueryLimits", ScopeOrderPad},
		// Authorise.
		{"Trading", "AuthoriseOrder", ScopeAuthorise},
		// Unknown pairs, and known ones in another case.
		{"Zenith", "QueryFeeds", "deny"},
		{"Trading", "Something", "deny"},
		{"Notify", "Anything", "deny"},
		{"Nonesuch", "Feeds", "deny"},
		{"market", "Markets", "deny"},
		{"MARKET", "Security", "deny"},
		{"channel", "x", "deny"},
		{"auth", "AuthToken", "deny"},
		{"Zenith", "feeds", "deny"},
		{"Trading", "accounts", "deny"},
		{"Trading", "placeorder", "deny"},
		{"", "", "deny"},
		{"Zenith", "", "deny"},
		{"Zenith", "!Feeds", "deny"},
		{"Zenith", "Feeds ", "deny"},
		{"Zenith", "Feeds\x00", "deny"},
		{"*", "Feeds", "deny"},
		{"Zenith", "*", "deny"},
		{"*", "*", "deny"},
	}
	p := Default()
	for _, tt := range tests {
		t.Run(tt.controller+"/"+tt.topic, func(t *testing.T) {
			switch tt.needs {
			case "":
				if ok, needed := p.Allowed(nil, tt.controller, tt.topic); !ok || needed != "" {
					t.Errorf("without scopes: %v %q, want allowed", ok, needed)
				}
			case "deny":
				if ok, needed := p.Allowed(all, tt.controller, tt.topic); ok || needed != "" {
					t.Errorf("with every scope: %v %q, want denied with nothing needed", ok, needed)
				}
			default:
				if ok, needed := p.Allowed([]string{tt.needs}, tt.controller, tt.topic); !ok || needed != tt.needs {
					t.Errorf("with %s: %v %q, want allowed", tt.needs, ok, needed)
				}
				var others []string
				for _, s := range all {
					if s != tt.needs {
						others = append(others, s)
					}
				}
				others = append(others, "openid", strings.ToLower(tt.needs), "Zenith/"+strings.TrimPrefix(tt.needs, "Service/"))
				if ok, needed := p.Allowed(others, tt.controller, tt.topic); ok || needed != tt.needs {
					t.Errorf("with every other scope: %v %q, want denied needing %s", ok, needed, tt.needs)
				}
			}
		})
	}
}

func TestPolicyConfig(t *testing.T) {
	cfg := Config{Rules: []Rule{
		{Controller: "Zenith", Topic: "QueryFeeds", AllowWithoutScope: true},       // added
		{Controller: "Market", Topic: "Markets", Scopes: []string{ScopeMarket}},    // replaces a default row
		{Controller: "Trading", Topic: "Accounts", Deny: true},                     // takes one away
		{Controller: "Watchlist", Topic: Any, Scopes: []string{"a", ScopeTrading}}, // any of
		{Controller: "Custom", Topic: Any, Scopes: []string{"Service/Custom"}},
	}}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	check := func(p *Policy, scopes []string, c, topic string, wantOK bool, wantNeeded string) {
		t.Helper()
		if ok, needed := p.Allowed(scopes, c, topic); ok != wantOK || needed != wantNeeded {
			t.Errorf("Allowed(%q, %s/%s) = %v %q, want %v %q", scopes, c, topic, ok, needed, wantOK, wantNeeded)
		}
	}
	check(p, nil, "Zenith", "QueryFeeds", true, "")
	check(p, nil, "Market", "Markets", false, ScopeMarket)
	check(p, []string{ScopeMarket}, "Market", "Markets", true, ScopeMarket)
	check(p, []string{ScopeTrading, ScopeMarket}, "Trading", "Accounts", false, "")
	check(p, nil, "Trading", "TradingAccounts", true, "") // the rest stays
	check(p, nil, "Watchlist", "Watchlists", true, "")    // exact beats the wildcard
	check(p, []string{ScopeMarket}, "Watchlist", "Watchlist!1", false, "a "+ScopeTrading)
	check(p, []string{ScopeTrading}, "Watchlist", "Watchlist!1", true, ScopeTrading)
	check(p, []string{"Service/Custom"}, "Custom", "Anything!x", true, "Service/Custom")

	cfg.ReplaceDefaults = true
	p, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	check(p, nil, "Zenith", "QueryFeeds", true, "")
	check(p, []string{ScopeMarket}, "Market", "Markets", true, ScopeMarket)
	check(p, nil, "Zenith", "Feeds", false, "") // a default row, gone
	check(p, nil, "Auth", "AuthToken", false, "")
	check(p, nil, "Market", "Configure", false, "")

	// A catch-all: "*" / "*".
	p, err = New(Config{ReplaceDefaults: true, Rules: []Rule{
		{Controller: Any, Topic: Any, Scopes: []string{"all"}},
		{Controller: Any, Topic: "Feeds", AllowWithoutScope: true},
		{Controller: "Zenith", Topic: Any, Deny: true},
		{Controller: "Custom", Topic: Any, Scopes: []string{"custom"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	check(p, nil, "Custom", "Feeds", true, "")  // (any, topic) before (controller, any)
	check(p, nil, "Zenith", "Feeds", false, "") // but a deny wins over every row it matches
	check(p, []string{"all"}, "Zenith", "Other", false, "")
	check(p, []string{"all"}, "Other", "Other", true, "all")

	var nilPolicy *Policy
	check(nilPolicy, []string{ScopeMarket}, "Zenith", "Feeds", false, "")
}

func TestPolicyConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		rule Rule
		want string
	}{
		{"empty controller", Rule{Topic: "x", Deny: true}, "controller is empty"},
		{"empty topic", Rule{Controller: "x", Deny: true}, "topic is empty"},
		{"glob controller", Rule{Controller: "Mark*", Topic: "x", Deny: true}, "only \"*\" alone"},
		{"glob topic", Rule{Controller: "Market", Topic: "Query*", Deny: true}, "only \"*\" alone"},
		{"argument in topic", Rule{Controller: "Market", Topic: "Security!BHP", Deny: true}, "holds \"!\""},
		{"space in controller", Rule{Controller: "Market ", Topic: "x", Deny: true}, "space or control"},
		{"nothing", Rule{Controller: "Market", Topic: "x"}, "exactly one of"},
		{"scopes and allow", Rule{Controller: "Market", Topic: "x", Scopes: []string{"a"}, AllowWithoutScope: true}, "exactly one of"},
		{"allow and deny", Rule{Controller: "Market", Topic: "x", AllowWithoutScope: true, Deny: true}, "exactly one of"},
		{"empty scope", Rule{Controller: "Market", Topic: "x", Scopes: []string{""}}, "scope \"\""},
		{"two scopes in one", Rule{Controller: "Market", Topic: "x", Scopes: []string{"a b"}}, "scope \"a b\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Rules: []Rule{{Controller: "ok", Topic: "ok", Deny: true}, tt.rule}}
			before := c.Rules[1]
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "policy rule 1 ") {
				t.Fatalf("Validate: %v, want rule 1 ... %q", err, tt.want)
			}
			if _, err := New(c); err == nil {
				t.Error("New built an invalid config")
			}
			if c.Rules[1].Controller != before.Controller || len(c.Rules) != 2 {
				t.Error("Validate changed the config")
			}
		})
	}
	dup := Config{Rules: []Rule{
		{Controller: "Market", Topic: "x", Deny: true},
		{Controller: "Market", Topic: "x", AllowWithoutScope: true},
	}}
	if err := dup.Validate(); err == nil || !strings.Contains(err.Error(), "same controller and topic as rule 0") {
		t.Errorf("duplicate pair: %v", err)
	}
}

// TestPolicyKeepsItsOwnCopy: changing the config after New changes
// nothing.
func TestPolicyKeepsItsOwnCopy(t *testing.T) {
	scopes := []string{"a"}
	c := Config{Rules: []Rule{{Controller: "C", Topic: "T", Scopes: scopes}}}
	p, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	scopes[0] = "b"
	if ok, _ := p.Allowed([]string{"b"}, "C", "T"); ok {
		t.Error("the policy follows the caller's slice")
	}
}

// TestPolicyDenyWins: a deny rule with a wildcard refuses every pair it
// matches, over the exact default rows ("deny Trading *" refuses
// PlaceOrder to OrderPad) and over the config's own more exact rows; an
// allowing rule of the config that a deny matches whole is refused at
// load, since it would never apply.
func TestPolicyDenyWins(t *testing.T) {
	for _, d := range []Rule{
		{Controller: "Trading", Topic: Any, Deny: true},
		{Controller: Any, Topic: "PlaceOrder", Deny: true},
		{Controller: Any, Topic: Any, Deny: true},
	} {
		p, err := New(Config{Rules: []Rule{d}})
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := p.Allowed([]string{ScopeOrderPad}, "Trading", "PlaceOrder!ACC1"); ok {
			t.Errorf("deny %s/%s: Trading/PlaceOrder still allowed to OrderPad", d.Controller, d.Topic)
		}
		if ok, _ := p.Allowed([]string{ScopeMarket}, "Market", "Security!BHP.ASX"); ok == (d.Controller == Any && d.Topic == Any) {
			t.Errorf("deny %s/%s: Market/Security allowed %v", d.Controller, d.Topic, ok)
		}
	}
	for _, tt := range []struct {
		rules   []Rule
		refused bool
	}{
		{[]Rule{{Controller: "Trading", Topic: Any, Deny: true}, {Controller: "Trading", Topic: "Orders", Scopes: []string{"x"}}}, true},
		{[]Rule{{Controller: Any, Topic: "Orders", Deny: true}, {Controller: "Trading", Topic: "Orders", AllowWithoutScope: true}}, true},
		{[]Rule{{Controller: Any, Topic: Any, Deny: true}, {Controller: Any, Topic: "Feeds", AllowWithoutScope: true}}, true},
		{[]Rule{{Controller: "Trading", Topic: Any, Deny: true}, {Controller: Any, Topic: "Orders", Scopes: []string{"x"}}}, false}, // other controllers' Orders
		{[]Rule{{Controller: "Trading", Topic: "Orders", Deny: true}, {Controller: "Trading", Topic: Any, Scopes: []string{"x"}}}, false},
	} {
		err := (&Config{Rules: tt.rules}).Validate()
		if (err != nil) != tt.refused {
			t.Errorf("%+v: error %v, want refused %v", tt.rules, err, tt.refused)
		}
	}
}
