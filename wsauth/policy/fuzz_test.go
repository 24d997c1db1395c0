package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// FuzzPolicy: Allowed agrees with a plain search of the rule list (the
// default table, and a config extending it): allowed implies the row that
// governs the pair allows it, with the scope Allowed names held; denied
// names that row's scopes. A topic with "!" arguments decides as its base.
func FuzzPolicy(f *testing.F) {
	configured := Config{Rules: []Rule{
		{Controller: "Zenith", Topic: "QueryFeeds", AllowWithoutScope: true},
		{Controller: "Trading", Topic: "Accounts", Deny: true},
		{Controller: "Watchlist", Topic: Any, Scopes: []string{ScopeMarket, ScopeTrading}},
		{Controller: Any, Topic: Any, Scopes: []string{"catch-all"}},
	}}
	policies := []struct {
		p     *Policy
		rules []Rule
	}{
		{Default(), DefaultRules()},
		{mustPolicy(f, configured), append(DefaultRules(), configured.Rules...)},
	}
	pool := []string{ScopeMarket, ScopeNews, ScopeTrading, ScopeOrderPad, ScopeAuthorise, "catch-all", "service/market", "Zenith/Trading"}
	for i, r := range DefaultRules() {
		f.Add(r.Controller, r.Topic, "", uint8(i))
		f.Add(r.Controller, r.Topic+"!x", "BHP.ASX", uint8(1<<(i%8)))
		f.Add(strings.ToLower(r.Controller), r.Topic, "", uint8(0xff))
	}
	f.Add("Market", "Markets", "x!y", uint8(0))
	f.Add("Trading", "Accounts", "", uint8(0xff))
	f.Add("Market", "!", "", uint8(0))
	f.Fuzz(func(t *testing.T, controller, topic, args string, mask uint8) {
		var scopes []string
		for i, s := range pool {
			if mask&(1<<i) != 0 {
				scopes = append(scopes, s)
			}
		}
		for i, pol := range policies {
			ok, needed := pol.p.Allowed(scopes, controller, topic)
			row := governingRow(pol.rules, controller, topic)
			switch {
			case ok && row == nil:
				t.Fatalf("policy %d allows %q/%q with no row", i, controller, topic)
			case ok && !row.AllowWithoutScope && !(slices.Contains(row.Scopes, needed) && slices.Contains(scopes, needed)):
				t.Fatalf("policy %d allows %q/%q by %q; the row %+v, the session %q", i, controller, topic, needed, *row, scopes)
			case ok && row.AllowWithoutScope && needed != "":
				t.Fatalf("policy %d names %q for a row open to all", i, needed)
			case !ok && row != nil && (row.AllowWithoutScope || slices.ContainsFunc(row.Scopes, func(s string) bool { return slices.Contains(scopes, s) })):
				t.Fatalf("policy %d denies %q/%q that the row %+v allows to %q", i, controller, topic, *row, scopes)
			case !ok && row != nil && needed != strings.Join(row.Scopes, " "):
				t.Fatalf("policy %d denies %q/%q needing %q; the row %+v", i, controller, topic, needed, *row)
			case !ok && row == nil && needed != "":
				t.Fatalf("policy %d denies %q/%q needing %q with no row", i, controller, topic, needed)
			}
			base := zenith.TopicBase(topic)
			withArgs := base + "!" + args
			if ok2, needed2 := pol.p.Allowed(scopes, controller, withArgs); ok2 != ok || needed2 != needed {
				t.Fatalf("policy %d: %q/%q gives %v %q, but %q gives %v %q", i, controller, topic, ok, needed, withArgs, ok2, needed2)
			}
		}
	})
}

// governingRow finds, by a plain search, the last rule (a later rule for a
// pair replaces an earlier) for the first of: exact pair, any controller,
// any topic, any pair. nil means no rule, or a Deny rule.
func governingRow(rules []Rule, controller, topic string) *Rule {
	base := topic
	if i := strings.IndexByte(topic, '!'); i >= 0 {
		base = topic[:i]
	}
	for _, try := range [][2]string{{controller, base}, {"*", base}, {controller, "*"}, {"*", "*"}} {
		var row *Rule
		for i := range rules {
			if rules[i].Controller == try[0] && rules[i].Topic == try[1] {
				row = &rules[i]
			}
		}
		if row != nil {
			if row.Deny {
				return nil
			}
			return row
		}
	}
	return nil
}

func mustPolicy(tb testing.TB, c Config) *Policy {
	tb.Helper()
	p, err := New(c)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
