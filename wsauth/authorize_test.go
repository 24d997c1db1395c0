package wsauth

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// TestSpellingsOfAControllerNeedItsScope: a session without the Trading scope
// sends, in one burst, messages a lenient parser (case-insensitive names,
// last duplicate wins, comments, trailing data, BOM, Enum.Parse-style
// values) could read as Trading/Orders or Trading/PlaceOrder. None reaches
// the backend; the socket stays usable.
func TestSpellingsOfAControllerNeedItsScope(t *testing.T) {
	e := newTestEnv(t, nil)
	c := e.dial(bearer(tokDemo)) // Market, News: no Trading, no OrderPad
	msgs := []string{
		`{"Controller":"Trading","Topic":"Orders"}`,
		`{"Controller":"Tr\u0061ding","Topic":"Ord\u0065rs"}`,
		`{"Controller":"trading","Topic":"Orders"}`,
		`{"Controller":"TRADING","Topic":"PlaceOrder"}`,
		`{"Controller":" Trading","Topic":"Orders"}`,
		`{"Controller":"Trading ","Topic":"Orders"}`,
		`{"Controller":"Market, Trading","Topic":"Orders"}`,
		`{"Controller":"Trading","Topic":"orders"}`,
		`{"Controller":"Trading","Topic":"Orders "}`,
		`{"Controller":"Trading","Topic":"Orders\u0000"}`,
		`{"Controller":"Trading","Topic":"Orders\t"}`,
		`{"Controller":"Trading","Topic":"!Orders"}`,
		`{"Controller":"Market","Topic":"Echo","controller":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","CONTROLLER":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","Contr\u006fller":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","Controller\/":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","Controller ":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","_Controller":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","Cοntroller":"Trading"}`, // Greek omicron
		`{"Controller":"Market","Topic":"Echo","Topic":"Orders"}`,
		`{"Controller":"Market","Topic":"Echo","topic":"PlaceOrder"}`,
		`{"Controller":"Market","Topic":"Echo","Controller":null}`,
		`{"Controller":"Market","Topic":"Echo"}{"Controller":"Trading","Topic":"Orders"}`,
		`{"Controller":"Market","Topic":"Echo"},{"Controller":"Trading","Topic":"Orders"}`,
		"\ufeff{\"Controller\":\"Trading\",\"Topic\":\"Orders\"}",
		`{"Controller":"Market","Topic":"Echo",/*x*/"Controller":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo"}//{"Controller":"Trading"}`,
		`{'Controller':'Trading','Topic':'Orders'}`,
		`{Controller:"Trading",Topic:"Orders"}`,
		`{"Controller":"Market","Topic":"Echo",}`,
		`{"Controller":"Market","Topic":"Echo\ud800","Controller2":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","x":NaN,"Controller":"Trading"}`,
		`{"Controller":"Market","Topic":"Echo","x":Infinity}`,
		`{"Controller":"Market","Topic":"Echo","TransactionID":1e400}`,
		`{"Controller":"Market","Topic":"Echo","TransactionID":99999999999999999999}`,
		`{"Controller":"Market","Topic":"Echo","TransactionID":"1"}`,
		`{"Controller":"Trading","Topic":"Accounts","Action":"sub"}`,
		`{"Controller":["Trading"],"Topic":"Orders"}`,
		`{"Controller":{"$ref":"Trading"},"Topic":"Orders"}`,
		`{"Controller":"Market","Topic":"Echo","Data":` + strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001) + `}`,
	}
	for _, m := range msgs {
		if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	marker := `{"Controller":"Market","Topic":"Echo","TransactionID":424242}`
	if err := c.WriteMessage(websocket.TextMessage, []byte(marker)); err != nil {
		t.Fatal(err)
	}
	replies := 0
	for {
		got := readMsg(t, c)
		if got == marker {
			break
		}
		if !strings.Contains(got, `"Action":"Error"`) {
			t.Fatalf("reply not an Error: %s", got)
		}
		replies++
	}
	if replies != len(msgs) {
		t.Fatalf("%d Error replies to %d hostile messages", replies, len(msgs))
	}
	for _, m := range e.backend.received() {
		if m != marker {
			t.Fatalf("the backend received %.120q", m)
		}
	}
}

// TestRefusedMessageReplyKeepsItsTransactionID: through a session, the
// Error reply of a message refused for a variant of Controller carries its
// TransactionID, and not the ambiguous Controller.
func TestRefusedMessageReplyKeepsItsTransactionID(t *testing.T) {
	e := newTestEnv(t, nil)
	c := e.dial(bearer(tokDemo))
	got := roundTrip(t, c, `{"Controller":"Market","controller":"Trading","Topic":"QueryAccounts","TransactionID":44}`)
	if !strings.Contains(got, `"TransactionID":44`) || strings.Contains(got, "Trading") || strings.Contains(got, `"Market"`) ||
		!strings.Contains(got, `"Data":"Data.Deserialise"`) {
		t.Errorf("reply %s", got)
	}
}

// zenithControllers are the protocol's controllers, in the order an enum of
// them would number them (a .NET Enum.Parse reads "4" as Trading).
var zenithControllers = []string{"Zenith", "Auth", "Market", "News", "Trading", "Watchlist", "Notify", "Channel", "Fragments"}

// lenientName is how a lenient backend may read a Controller or Topic
// value: surrounding whitespace trimmed and NULs ignored (.NET's culture
// comparisons skip them), then matched ignoring case against known names
// (a decimal matches the name at that index), the canonical spelling
// returned; an unknown name is kept as read.
func lenientName(v string, known []string, numbered bool) string {
	v = strings.TrimSpace(strings.ReplaceAll(v, "\x00", ""))
	if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < len(known) && numbered {
		return known[n]
	}
	for _, k := range known {
		if strings.EqualFold(k, v) {
			return k
		}
	}
	return v
}

// TestNoScopeRowsHoldForALenientBackend: A session holding no
// scope at all sends messages aimed at the rows that need none (Configure
// and QueryConfigure on any controller, every Channel topic, the listed
// free topics), spelled so that a backend that trims, folds case, skips
// NULs or reads enum numbers could take them for another pair. Whatever
// the gateway forwards, read that lenient way, is still a pair the
// default policy allows without a scope; the exact spellings are
// forwarded (the test can see a forward).
func TestNoScopeRowsHoldForALenientBackend(t *testing.T) {
	var topics []string
	for _, r := range policy.DefaultRules() {
		if r.Topic != policy.Any {
			topics = append(topics, r.Topic)
		}
	}
	e := newTestEnv(t, func(c *Config) { c.Limits.Default = policy.Limits{MessagesPerSecond: 1e6, Burst: 1 << 20} })
	c := e.dial(bearer(madeUpToken("u-none", nil, 0)))
	msgs := []string{
		`{"Controller":"Trading","Topic":"Configure"}`, // forwarded
		`{"Controller":"Trading","Topic":"Configure!PlaceOrder","Action":"Sub"}`,
		`{"Controller":"Trading","Topic":"QueryConfigure","Action":"Cancel"}`,
		`{"Controller":"Trading","Topic":"Accounts!x","Action":"Error"}`,
		`{"Controller":"trading","Topic":"Configure"}`,
		`{"Controller":"4","Topic":"Configure"}`,
		`{"Controller":"4","Topic":"Orders"}`,
		`{"Controller":"Trading","Topic":"configure!PlaceOrder"}`,
		`{"Controller":"Trading","Topic":" Configure"}`,
		`{"Controller":"Trading","Topic":"Configure\u0000"}`,
		`{"Controller":"Trading","Topic":"\u0000PlaceOrder"}`,
		`{"Controller":"Trading","Topic":"PlaceOrder\u0000!Configure"}`,
		`{"Controller":"Trading","Topic":"!Configure"}`,
		`{"Controller":"Trading","Topic":""}`,
		`{"Controller":"Trading"}`,
		`{"Controller":"Trading","Topic":"accounts"}`,
		`{"Controller":"Trading","Topic":"Accounts "}`,
		`{"Controller":"Channel","Topic":"Orders"}`, // forwarded: Channel/Orders needs nothing
		`{"Controller":"channel","Topic":"Orders"}`,
		`{"Controller":"Channel ","Topic":"Orders"}`,
		`{"Controller":"7","Topic":"Orders"}`,
		`{"Controller":"","Topic":"Feeds"}`,
		`{"Topic":"feeds"}`,
		`{"Controller":"Zenith","Topic":"Feeds\u0000"}`,
		`{"Controller":"Market","Topic":"markets"}`,
		`{"Controller":"Market","Topic":"Markets "}`,
		`{"Controller":"Watchlist","Topic":"watchlists"}`,
		`{"Controller":"Notify","Topic":"createscan"}`,
		`{"Controller":"Notify","Topic":"CreateScan\t"}`,
		`{"Controller":"News","Topic":"sources"}`,
		`{"Controller":"Auth ","Topic":"Configure"}`,
		`{"Controller":"auth","Topic":"AuthToken"}`,
		`{"Controller":"Fragments","Topic":"Configure"}`,
		`{"Controller":"Fragments","Topic":"configure"}`,
	}
	marker := `{"Controller":"Channel","Topic":"Echo","TransactionID":424242}`
	writePipelined(t, c, append(msgs, marker)...)
	readUntil(t, c, marker)
	got := e.backend.received()
	for _, want := range []string{msgs[0], msgs[17]} {
		if !slices.Contains(got, want) {
			t.Fatalf("not forwarded: %s (the test cannot see a forward)", want)
		}
	}
	for _, m := range got {
		if m == marker {
			continue
		}
		env, err := zenith.Scan([]byte(m))
		if err != nil {
			t.Fatalf("the backend got a message Scan refuses: %s", m)
		}
		ctl, topic := lenientName(env.Controller, zenithControllers, true), lenientName(zenith.TopicBase(env.Topic), topics, false)
		if ok, _ := policy.Default().Allowed(nil, ctl, topic); !ok {
			t.Errorf("forwarded %s: a lenient backend reads %s/%s, which needs a scope", m, ctl, topic)
		}
	}
}
