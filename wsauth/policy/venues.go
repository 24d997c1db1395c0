package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// Where a topic's venue is (VenueRule.In).
const (
	// VenueInArgument: the topic's "!" argument, a symbol CODE.VENUE
	// ("Security!BHP.ASX") or, with Form "venue", a venue alone
	// ("News!ASX").
	VenueInArgument = "argument"
	// VenueInData: a member of the message's Data (Member), a venue
	// ("Market": "ASX"), a symbol, or with Form "venues" a list of venues
	// (the request's own venue filter).
	VenueInData = "data"
	// VenueEvery: a topic whose answer spans venues and whose request
	// names none the gateway can check (searches, scans, watchlists): only
	// sessions holding the feed of every venue the backend serves
	// (VenueConfig.Venues) may send it.
	VenueEvery = "every"
	// VenueNone: a topic that carries no market data (Markets, ServerInfo,
	// every Auth topic): not checked.
	VenueNone = "none"
)

// How a venue is written where it is (VenueRule.Form).
const (
	FormSymbol = "symbol" // CODE.VENUE: a code, ".", a venue
	FormVenue  = "venue"  // a venue alone
	FormVenues = "venues" // a JSON array of venues (in Data only)
)

// MaxCodeLen bounds a symbol's code.
const MaxCodeLen = 32

// VenueRule says where the venue of a Controller/Topic's messages is, and
// which feed its data is.
type VenueRule struct {
	// Controller and Topic are matched as a scope Rule's are: exactly, the
	// topic before any "!", or "*" for any.
	Controller string `json:"controller"`
	Topic      string `json:"topic"`
	// In is where the venue is: "argument", "data", "every" or "none".
	In string `json:"in"`
	// Form is how the venue is written: "symbol" (CODE.VENUE, the default
	// for "argument"), "venue" (the default for "data") or "venues" (a
	// JSON array of venues in Data: every one must be held, and a message
	// without the member, or with an empty array, is checked as "every").
	Form string `json:"form,omitempty"`
	// Member is the Data member that holds the venue, with In "data",
	// matched exactly (case and all; a variant of the name in a message is
	// refused).
	Member string `json:"member,omitempty"`
	// Feed is the feed the topic's data is ("quotes", "depth", "news"),
	// required unless In is "none".
	Feed string `json:"feed,omitempty"`
}

// VenueConfig configures the entitlement check of the message gateway.
type VenueConfig struct {
	// Rules extend the default table (DefaultVenueRules): a rule for the
	// same Controller and Topic as a default row replaces it. At most one
	// rule per Controller/Topic.
	Rules []VenueRule `json:"rules,omitempty"`
	// ReplaceDefaults makes Rules the whole table. Pairs no rule matches
	// are then checked as "every" of the feed "quotes".
	ReplaceDefaults bool `json:"replace_defaults,omitempty"`
	// Venues are, per feed, the venues the backend serves: what a session
	// must hold to send a topic whose rule is "every". A feed without a
	// list lets no session send such a topic.
	Venues map[string][]string `json:"venues,omitempty"`
}

// Validate checks the config and changes nothing.
func (c *VenueConfig) Validate() error {
	var errs []error
	seen := map[ruleKey]int{}
	for i, r := range c.Rules {
		if err := r.validate(); err != nil {
			errs = append(errs, fmt.Errorf("venue rule %d (%q / %q): %w", i, r.Controller, r.Topic, err))
			continue
		}
		k := ruleKey{r.Controller, r.Topic}
		if j, dup := seen[k]; dup {
			errs = append(errs, fmt.Errorf("venue rule %d (%q / %q): same controller and topic as rule %d", i, r.Controller, r.Topic, j))
		}
		seen[k] = i
	}
	for feed, vs := range c.Venues {
		if !entitle.ValidFeed(feed) {
			errs = append(errs, fmt.Errorf("venues: %q is not a feed (a lower-case word)", feed))
		}
		for _, v := range vs {
			if !entitle.ValidVenue(v) {
				errs = append(errs, fmt.Errorf("venues of %s: %q is not a venue (A-Z and 0-9, at most %d)", feed, v, entitle.MaxVenueLen))
			}
		}
	}
	return errors.Join(errs...)
}

func (r *VenueRule) validate() error {
	if err := checkKey(r.Controller, r.Topic); err != nil {
		return err
	}
	form := r.form()
	switch r.In {
	case VenueNone:
		if r.Feed != "" || r.Member != "" || r.Form != "" {
			return errors.New(`"none" takes no feed, member or form`)
		}
		return nil
	case VenueInArgument:
		if form != FormSymbol && form != FormVenue || r.Member != "" {
			return errors.New(`"argument" takes the form "symbol" or "venue", and no member`)
		}
	case VenueInData:
		if r.Member == "" || strings.ContainsFunc(r.Member, func(c rune) bool { return c <= ' ' || c > '~' || c == '\\' || c == '"' }) {
			return errors.New(`"data" needs a member: a name in printable ASCII`)
		}
		if form != FormSymbol && form != FormVenue && form != FormVenues {
			return fmt.Errorf("form %q: want symbol, venue or venues", r.Form)
		}
	case VenueEvery:
		if r.Member != "" || r.Form != "" {
			return errors.New(`"every" takes no member or form`)
		}
	default:
		return fmt.Errorf("in %q: want argument, data, every or none", r.In)
	}
	if !entitle.ValidFeed(r.Feed) {
		return fmt.Errorf("feed %q is not a feed (a lower-case word)", r.Feed)
	}
	return nil
}

func (r *VenueRule) form() string {
	switch {
	case r.Form != "":
		return r.Form
	case r.In == VenueInArgument:
		return FormSymbol
	case r.In == VenueInData:
		return FormVenue
	}
	return ""
}

// Venues decides which messages a session's entitlements allow. Build it
// with NewVenues; it is immutable and safe for concurrent use.
type Venues struct {
	rules map[ruleKey]*VenueRule
	all   map[string][]string // VenueConfig.Venues
}

// NewVenues builds the table c configures.
func NewVenues(c VenueConfig) (*Venues, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var rules []VenueRule
	if !c.ReplaceDefaults {
		rules = DefaultVenueRules()
	}
	rules = append(rules, c.Rules...) // a later rule for a pair replaces the earlier
	v := &Venues{rules: make(map[ruleKey]*VenueRule, len(rules)), all: map[string][]string{}}
	for _, r := range rules {
		r.Form = r.form()
		v.rules[ruleKey{r.Controller, r.Topic}] = &r
	}
	for feed, vs := range c.Venues {
		v.all[feed] = slices.Clone(vs)
	}
	return v, nil
}

var everyQuotes = &VenueRule{In: VenueEvery, Feed: "quotes"}

func (v *Venues) lookup(controller, base string) *VenueRule {
	for _, k := range lookupOrder(controller, base) {
		if r, found := v.rules[k]; found {
			return r
		}
	}
	return everyQuotes
}

// Refusal reasons of Check, for logs and tests.
const (
	VenueNotHeld   = "venue not held"       // the session lacks the feed of a venue the message names
	VenueMalformed = "venue unreadable"     // the argument or member breaks its grammar
	VenueMissing   = "venue missing"        // the rule's member is absent
	VenueNotEvery  = "not every venue held" // an "every" topic, and the session lacks a venue of its feed
)

// Check says whether a session holding ent may send a message for
// controller and topic (with its "!" arguments) whose Data is data (nil
// for none). ok false comes with the reason (one of the Venue* reasons).
// A message the table's grammar cannot read is refused as one naming a
// venue the session does not hold: case variants, look-alikes, an empty
// segment, a second "!".
func (v *Venues) Check(ent entitle.Set, controller, topic string, data []byte) (ok bool, reason string) {
	base, arg, hasArg := strings.Cut(topic, "!")
	r := v.lookup(controller, base)
	switch r.In {
	case VenueNone:
		return true, ""
	case VenueEvery:
		return v.holdsEvery(ent, r.Feed)
	case VenueInArgument:
		if !hasArg {
			return false, VenueMissing
		}
		venue, ok := ParseVenue(arg, r.Form)
		if !ok {
			return false, VenueMalformed
		}
		return held(ent, venue, r.Feed)
	}
	raw, found, err := zenith.DataMember(data, r.Member)
	switch {
	case err != nil:
		return false, VenueMalformed
	case !found && r.Form == FormVenues:
		return v.holdsEvery(ent, r.Feed)
	case !found:
		return false, VenueMissing
	}
	if r.Form == FormVenues {
		venues, ok := parseVenueList(raw)
		switch {
		case !ok:
			return false, VenueMalformed
		case len(venues) == 0:
			// An empty filter may mean "every venue" to the backend.
			return v.holdsEvery(ent, r.Feed)
		}
		for _, venue := range venues {
			if ok, reason := held(ent, venue, r.Feed); !ok {
				return false, reason
			}
		}
		return true, ""
	}
	s, ok := plainString(raw)
	if !ok {
		return false, VenueMalformed
	}
	venue, ok := ParseVenue(s, r.Form)
	if !ok {
		return false, VenueMalformed
	}
	return held(ent, venue, r.Feed)
}

func held(ent entitle.Set, venue, feed string) (bool, string) {
	if ent.Has(venue, feed) {
		return true, ""
	}
	return false, VenueNotHeld
}

func (v *Venues) holdsEvery(ent entitle.Set, feed string) (bool, string) {
	all, known := v.all[feed]
	if known && ent.HasAll(all, feed) {
		return true, ""
	}
	return false, VenueNotEvery
}

// ParseVenue reads a venue written in form: with FormSymbol a code of 1
// to MaxCodeLen upper-case letters and digits, ".", a venue; with
// FormVenue a venue alone. A venue is 1 to entitle.MaxVenueLen upper-case
// letters and digits. Nothing else is read: lower case, other characters,
// an empty segment, a second "." or "!".
func ParseVenue(s, form string) (venue string, ok bool) {
	if form == FormSymbol {
		code, v, found := strings.Cut(s, ".")
		if !found || !validCode(code) {
			return "", false
		}
		s = v
	}
	if !entitle.ValidVenue(s) {
		return "", false
	}
	return s, true
}

func validCode(c string) bool {
	if c == "" || len(c) > MaxCodeLen {
		return false
	}
	for i := 0; i < len(c); i++ {
		if !('A' <= c[i] && c[i] <= 'Z' || '0' <= c[i] && c[i] <= '9') {
			return false
		}
	}
	return true
}

// plainString is the content of a JSON string written without escapes
// (a venue or symbol needs none; an escape could hide a look-alike).
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' || slices.Contains(raw[1:len(raw)-1], '\\') {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// parseVenueList reads a JSON array of venues written as plain strings;
// an empty array names none.
func parseVenueList(raw []byte) ([]string, bool) {
	s := strings.TrimSpace(string(raw))
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	body := strings.TrimSpace(s[1 : len(s)-1])
	if body == "" {
		return nil, true
	}
	var out []string
	for item := range strings.SplitSeq(body, ",") {
		v, ok := plainString([]byte(strings.TrimSpace(item)))
		if !ok || !entitle.ValidVenue(v) {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}
