package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// The OAuth scopes of the message service's areas. docs/protocol.md
// ("Permission needed per Controller/Topic") names the areas Market, News,
// Trading, OrderPad and Authorise; Gatehouse grants each as the OAuth scope
// Service/<Area> (docs/api-surface.md's rename of Zenith/<Area>), and the Identify
// reply lists it as <vendor>.Service.<Area>.
const (
	ScopeMarket    = "Service/Market"
	ScopeNews      = "Service/News"
	ScopeTrading   = "Service/Trading"
	ScopeOrderPad  = "Service/OrderPad"
	ScopeAuthorise = "Service/Authorise"
)

// Any, as a Rule's Controller or Topic, matches every controller or topic.
const Any = "*"

// Rule says what a Controller/Topic pair needs. Exactly one of Scopes,
// AllowWithoutScope and Deny is set.
type Rule struct {
	// Controller is the controller the rule is for, matched exactly (case
	// sensitive, as the protocol is), or "*" for every controller, those
	// the backend has and Gatehouse does not know included: a "*" rule
	// that allows without scope opens that topic on all of them.
	Controller string `json:"controller"`
	// Topic is the topic the rule is for, matched exactly against the
	// message's topic before any "!" argument, or "*" for every topic. It
	// holds no "!".
	Topic string `json:"topic"`
	// Scopes: the message is allowed when the session holds any one of
	// these OAuth scopes (e.g. "Service/Market"), compared exactly.
	Scopes []string `json:"scopes,omitempty"`
	// AllowWithoutScope allows the message to every authenticated session,
	// whatever its scopes. Default false.
	AllowWithoutScope bool `json:"allow_without_scope,omitempty"`
	// Deny refuses the message to every session, and wins over every
	// allowing rule it matches, the default table's and the config's, more
	// exact ones included: "deny Trading *" refuses every Trading topic,
	// PlaceOrder too. A config's allowing rule that a deny matches whole
	// is refused, since it would never apply. Default false.
	Deny bool `json:"deny,omitempty"`
}

// Config is the message policy's configuration.
type Config struct {
	// Rules extend the default table (DefaultRules): a rule for the same
	// Controller and Topic as a default row replaces that row, others are
	// added. At most one rule per Controller/Topic pair.
	Rules []Rule `json:"rules,omitempty"`
	// ReplaceDefaults makes Rules the whole table, without the default
	// rows. Default false. Pairs no rule matches are denied either way.
	ReplaceDefaults bool `json:"replace_defaults,omitempty"`
}

// Validate checks the config and changes nothing.
func (c *Config) Validate() error {
	seen := make(map[ruleKey]int, len(c.Rules))
	var errs []error
	for i, r := range c.Rules {
		if err := r.validate(); err != nil {
			errs = append(errs, fmt.Errorf("policy rule %d (%q / %q): %w", i, r.Controller, r.Topic, err))
			continue
		}
		k := ruleKey{r.Controller, r.Topic}
		if j, dup := seen[k]; dup {
			errs = append(errs, fmt.Errorf("policy rule %d (%q / %q): same controller and topic as rule %d", i, r.Controller, r.Topic, j))
			continue
		}
		seen[k] = i
	}
	for i, r := range c.Rules {
		if r.Deny {
			continue
		}
		for j, d := range c.Rules {
			if d.Deny && (d.Controller == Any || d.Controller == r.Controller) && (d.Topic == Any || d.Topic == r.Topic) {
				errs = append(errs, fmt.Errorf("policy rule %d (%q / %q) never applies: deny rule %d (%q / %q) wins over it", i, r.Controller, r.Topic, j, d.Controller, d.Topic))
				break
			}
		}
	}
	return errors.Join(errs...)
}

func (r *Rule) validate() error {
	if err := checkKey(r.Controller, r.Topic); err != nil {
		return err
	}
	set := 0
	for _, b := range []bool{len(r.Scopes) > 0, r.AllowWithoutScope, r.Deny} {
		if b {
			set++
		}
	}
	if set != 1 {
		return errors.New("needs exactly one of scopes, allow_without_scope and deny")
	}
	for _, s := range r.Scopes {
		if s == "" || strings.ContainsFunc(s, isSpaceOrControl) {
			return fmt.Errorf("scope %q is empty or holds a space or control character", s)
		}
	}
	return nil
}

// checkKey checks the Controller and Topic of a rule, of either table.
func checkKey(controller, topic string) error {
	if err := checkName("controller", controller); err != nil {
		return err
	}
	if err := checkName("topic", topic); err != nil {
		return err
	}
	if strings.Contains(topic, "!") {
		return errors.New(`topic holds "!": rules match the topic before its arguments`)
	}
	return nil
}

func checkName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is empty (%q matches every %s)", what, Any, what)
	case name != Any && strings.Contains(name, Any):
		return fmt.Errorf("%s %q holds %q: only %q alone is a wildcard", what, name, Any, Any)
	case strings.ContainsFunc(name, isSpaceOrControl):
		return fmt.Errorf("%s %q holds a space or control character", what, name)
	}
	return nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

// Policy decides which Controller/Topic pairs a session's scopes allow.
// Build it with New or Default; it is immutable and safe for
// concurrent use. A nil *Policy denies everything.
type Policy struct {
	rules map[ruleKey]*rule
	// wildDeny are the deny rules with a wildcard, looked at before the
	// rules (a deny wins); an exact deny is a nil rule in rules, found
	// first anyway.
	wildDeny map[ruleKey]bool
}

type ruleKey struct{ controller, topic string }

// lookupOrder is the keys a message for controller and topic base matches,
// the most exact first: what both tables (Policy, Venues) search in.
func lookupOrder(controller, base string) [4]ruleKey {
	return [...]ruleKey{{controller, base}, {Any, base}, {controller, Any}, {Any, Any}}
}

type rule struct {
	scopes []string
	needed string // the scopes, space-separated
	open   bool   // AllowWithoutScope
}

// New builds the policy c configures.
func New(c Config) (*Policy, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var rules []Rule
	if !c.ReplaceDefaults {
		rules = DefaultRules()
	}
	rules = append(rules, c.Rules...) // a later rule for a pair replaces the earlier
	p := &Policy{rules: make(map[ruleKey]*rule, len(rules))}
	for _, r := range rules {
		k := ruleKey{r.Controller, r.Topic}
		if r.Deny {
			p.rules[k] = nil
			if r.Controller == Any || r.Topic == Any {
				if p.wildDeny == nil {
					p.wildDeny = map[ruleKey]bool{}
				}
				p.wildDeny[k] = true
			}
			continue
		}
		p.rules[k] = &rule{scopes: slices.Clone(r.Scopes), needed: strings.Join(r.Scopes, " "), open: r.AllowWithoutScope}
	}
	return p, nil
}

var defaultPolicy, _ = New(Config{})

// Default is the policy of the default table, DefaultRules.
func Default() *Policy { return defaultPolicy }

// Allowed says whether a session holding scopes may send a message for
// controller and topic. The topic's "!" arguments are ignored
// ("Security!BHP.ASX" decides as "Security"); names match exactly. A
// deny rule that matches the pair denies it; else the rule applied is the
// first of: controller and topic both exact; any controller with this
// topic; this controller with any topic; any controller with any topic. A
// pair no rule matches is denied.
//
// needed is the scope that allowed the message, or, when it is denied,
// the scopes any one of which would allow it, space-separated; it is ""
// when the rule allows without a scope and when no rule (or a Deny rule)
// matches: no scope would allow the pair.
func (p *Policy) Allowed(scopes []string, controller, topic string) (ok bool, needed string) {
	r := p.lookup(controller, zenith.TopicBase(topic))
	switch {
	case r == nil:
		return false, ""
	case r.open:
		return true, ""
	}
	for _, s := range r.scopes {
		if slices.Contains(scopes, s) {
			return true, s
		}
	}
	return false, r.needed
}

// UsesScope reports whether a rule of p allows a message to scope.
func (p *Policy) UsesScope(scope string) bool {
	for _, r := range p.rules {
		if r != nil && slices.Contains(r.scopes, scope) {
			return true
		}
	}
	return false
}

func (p *Policy) lookup(controller, base string) *rule {
	if p == nil {
		return nil
	}
	if p.wildDeny != nil && (p.wildDeny[ruleKey{Any, base}] || p.wildDeny[ruleKey{controller, Any}] || p.wildDeny[ruleKey{Any, Any}]) {
		return nil
	}
	for _, k := range lookupOrder(controller, base) {
		if r, found := p.rules[k]; found {
			return r // nil for a Deny rule: it stops the search
		}
	}
	return nil
}

// DefaultRules is the default table, docs/protocol.md "Permission needed
// per Controller/Topic", as rules (a fresh copy each call). The table names
// no controller for the OrderPad and Authorise topics; they are the Trading
// controller's, as in the original's Trading API.
func DefaultRules() []Rule {
	var rs []Rule
	add := func(controller string, scope string, topics ...string) {
		for _, t := range topics {
			r := Rule{Controller: controller, Topic: t}
			if scope == "" {
				r.AllowWithoutScope = true
			} else {
				r.Scopes = []string{scope}
			}
			rs = append(rs, r)
		}
	}
	// No scope.
	add("Auth", "", Any)
	add("Channel", "", Any)
	add(Any, "", "Configure", "QueryConfigure")
	add("Market", "", "Markets", "QueryMarkets", "QueryBrokers", "QueryTickTables", "QueryTradingStates", "QueryMixedMarket")
	add("News", "", "Sources", "QuerySources")
	add("Notify", "", "CreateScan", "DeleteScan", "QueryScan", "QueryScans", "Scans", "UpdateScan")
	add("Trading", "", "Accounts", "TradingAccounts", "QueryOrderStatuses", "QueryRequestStatuses", "QueryTradingMarkets")
	add("Watchlist", "", "Watchlists")
	add("Zenith", "", "Feeds", "ServerInfo")
	// Market scope.
	add("Market", ScopeMarket, Any)
	add("Fragments", ScopeMarket, Any)
	add("Notify", ScopeMarket, "ExecuteScan", "Matches", "QueryMatches", "UpdateScanStatus")
	add("Watchlist", ScopeMarket, Any)
	// News scope.
	add("News", ScopeNews, "News", "QueryNews")
	// Trading scope.
	add("Trading", ScopeTrading, "Audit", "Balances", "Holdings", "Orders", "Requests", "Transactions",
		"QueryAccounts", "QueryBalances", "QueryHoldings", "QueryOrderAudit", "QueryOrders", "QueryRequests",
		"QueryTransactions")
	// OrderPad scope.
	add("Trading", ScopeOrderPad, "PlaceOrder", "AmendOrder", "CancelOrder", "MoveOrder", "CalculatePlaceOrder",
		"CalculateAmendOrder", "RequestQuote", "QueryLimits")
	// Authorise scope.
	add("Trading", ScopeAuthorise, "AuthoriseOrder")
	return rs
}
