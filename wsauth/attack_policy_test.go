package wsauth

// From an attack on the per-message authorization and the original web
// client's profile: the envelope scan against what an ASP.NET or
// JavaScript backend reads, the policy's wildcard rows, the Auth
// controller the gateway answers, the reserved TransactionIDs, the
// limits. Three findings, each test failing before its fix: an Unsub the
// backend could not read left the subscription open there and untracked
// here; the gateway's own Unsub was unreadable to a backend with an int32
// TransactionID; a rounding backend's echo was swallowed as an answer to
// the gateway.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
	"github.com/gorilla/websocket"
)

// --- helpers -----------------------------------------------------------------

// modelBackend is a backend whose replies a model writes (reply, on one
// socket's subscriptions held): it keeps every message it received, and
// the subscriptions the last socket holds.
type modelBackend struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []string
	held map[[2]string]bool
}

func newModelBackend(t testing.TB, reply func(msg []byte, held map[[2]string]bool) []string) *modelBackend {
	b := &modelBackend{}
	up := websocket.Upgrader{Subprotocols: []string{DefaultSubprotocol, "ZenithJson"}}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		held := map[[2]string]bool{}
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			out := reply(msg, held)
			b.mu.Lock()
			b.got = append(b.got, string(msg))
			b.held = maps.Clone(held)
			b.mu.Unlock()
			for _, m := range out {
				if c.WriteMessage(websocket.TextMessage, []byte(m)) != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *modelBackend) url() string { return "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/zenith" }

func (b *modelBackend) received() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.got...)
}

// holds is how many subscriptions the backend holds.
func (b *modelBackend) holds() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.held)
}

// newNumberBackend is a backend that reads every message into a generic
// value and writes its replies from that value, as a backend in
// JavaScript (JSON.parse, JSON.stringify) or one that keeps TransactionID
// in a double does: numbers are float64. It answers a Sub with a
// snapshot, an Unsub with a confirmation, and an "Echo" topic with the
// message re-encoded.
func newNumberBackend(t testing.TB) *modelBackend {
	return newModelBackend(t, func(msg []byte, _ map[[2]string]bool) []string {
		var m map[string]any
		if json.Unmarshal(msg, &m) != nil {
			return nil
		}
		reply := map[string]any{"Controller": m["Controller"], "Topic": m["Topic"]}
		if tid, ok := m["TransactionID"]; ok {
			reply["TransactionID"] = tid
		}
		switch {
		case m["Action"] == zenith.ActionSub:
			reply["Action"], reply["Data"] = zenith.ActionPublish, "snapshot"
		case m["Action"] == zenith.ActionUnsub:
			reply["Action"], reply["Confirm"] = zenith.ActionUnsub, true
		case m["Topic"] == "Echo":
			reply = m
		default:
			return nil
		}
		out, _ := json.Marshal(reply)
		return []string{string(out)}
	})
}

// readUntilContains reads messages until one contains marker, returning
// those before it.
func readUntilContains(t testing.TB, c *websocket.Conn, marker string) []string {
	t.Helper()
	var got []string
	for range 10_000 {
		m := readMsg(t, c)
		if strings.Contains(m, marker) {
			return got
		}
		got = append(got, m)
	}
	t.Fatal("marker never came")
	return nil
}

// --- reserved TransactionIDs -------------------------------------------------

// TestTransactionIDsADoubleHolds: a client's TransactionID beyond 2^53 - 1
// is refused (Error/Data.Deserialise) and never reaches the backend: a
// backend that reads numbers as doubles (JavaScript, a .NET double) would
// round 90071992539999999 into the reserved range, where the gateway,
// once it has sent a message of its own, drops the echo as its own
// answer. One within the range, next to the reserved prefix, comes back.
func TestTransactionIDsADoubleHolds(t *testing.T) {
	nb := newNumberBackend(t)
	e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams = []string{nb.url()} })
	c := e.dial(bearer(tokDemo)) // Market, News
	if got := roundTrip(t, c, subMsg("News", "News!ASX", 1)); !strings.Contains(got, `"snapshot"`) {
		t.Fatalf("Sub: %s", got)
	}
	// The same subject without News: the gateway unsubscribes News!ASX
	// itself, with a reserved TransactionID (ownSent).
	narrower := madeUpToken("u-demo", []string{policy.ScopeMarket}, 0)
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Auth","Topic":"AuthToken","TransactionID":2,"Data":{"Provider":"Bearer","AccessToken":"`+narrower+`"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Echo","TransactionID":3}`)); err != nil {
		t.Fatal(err)
	}
	readUntilContains(t, c, `"TransactionID":3`)
	own := false
	for _, m := range nb.received() {
		own = own || strings.Contains(m, `"Action":"Unsub","TransactionID":9007199254`)
	}
	if !own {
		t.Fatal("the gateway sent no Unsub of its own: the test does not reach the drop")
	}

	const beyond = "90071992539999999"
	if got := roundTrip(t, c, `{"Controller":"Market","Topic":"Echo","TransactionID":`+beyond+`}`); got != `{"Controller":"Market","Topic":"Echo","Action":"Error","Data":"Data.Deserialise"}` {
		t.Errorf("TransactionID %s: %s", beyond, got)
	}
	const within = "9007199253999999"
	if got := roundTrip(t, c, `{"Controller":"Market","Topic":"Echo","TransactionID":`+within+`}`); !strings.Contains(got, `"TransactionID":`+within) {
		t.Errorf("TransactionID %s: %s", within, got)
	}
	for _, m := range nb.received() {
		if strings.Contains(m, beyond) {
			t.Errorf("the backend got %s", m)
		}
	}
}

// jsonDepth is the deepest nesting of objects and arrays in msg, a valid
// JSON text (brackets in strings not counted).
func jsonDepth(msg []byte) int {
	d, most, in, esc := 0, 0, false, false
	for _, c := range msg {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case in:
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

// newDotnetBackend is a backend that reads messages as an ASP.NET one
// with default options may: System.Text.Json and Newtonsoft (13.0.1 on)
// both refuse a document nested deeper than 64, and, when the envelope's
// TransactionID is an int (int32TID), one whose TransactionID does not
// fit; either refuses the whole message. A message it cannot read gets
// Error/Data.Deserialise, without a TransactionID, and has no effect. It
// keeps the subscriptions a Sub makes and an Unsub ends; a "Tick"
// publishes one message on each held subscription, then answers "done"
// with the Tick's TransactionID.
func newDotnetBackend(t testing.TB, int32TID bool) *modelBackend {
	return newModelBackend(t, func(msg []byte, held map[[2]string]bool) []string {
		var env struct {
			Controller, Topic, Action string
			TransactionID             *int64
		}
		if json.Unmarshal(msg, &env) != nil || jsonDepth(msg) > 64 ||
			int32TID && env.TransactionID != nil && int64(int32(*env.TransactionID)) != *env.TransactionID {
			return []string{`{"Controller":"Zenith","Action":"Error","Data":"Data.Deserialise"}`}
		}
		tid := ""
		if env.TransactionID != nil {
			tid = `,"TransactionID":` + strconv.FormatInt(*env.TransactionID, 10)
		}
		head := `{"Controller":` + strconv.Quote(env.Controller) + `,"Topic":` + strconv.Quote(env.Topic)
		k := [2]string{env.Controller, env.Topic}
		switch {
		case env.Action == zenith.ActionSub:
			held[k] = true
			return []string{head + `,"Action":"Publish"` + tid + `,"Data":"snapshot"}`}
		case env.Action == zenith.ActionUnsub:
			delete(held, k)
			return []string{head + `,"Action":"Unsub"` + tid + `,"Confirm":true}`}
		case env.Topic == "Tick":
			var out []string
			for h := range held {
				out = append(out, `{"Controller":`+strconv.Quote(h[0])+`,"Topic":`+strconv.Quote(h[1])+`,"Action":"Publish","Data":"tick"}`)
			}
			return append(out, head+`,"Action":"Publish"`+tid+`,"Data":"done"}`)
		}
		return nil
	})
}

// tick sends a Tick and returns the messages the client gets before its
// answer.
func tick(t testing.TB, c *websocket.Conn, tid int) []string {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Tick","TransactionID":`+strconv.Itoa(tid)+`}`)); err != nil {
		t.Fatal(err)
	}
	return readUntilContains(t, c, `"Data":"done"`)
}

// TestOwnUnsubReadableByInt32Backend: with transaction_ids int32, the
// gateway's own Unsub (here for a scope lost on re-authentication) carries
// a TransactionID a backend that reads a 32-bit int can read, so the
// backend ends the subscription and no more of its data reaches the
// session. (With the default, int53, this backend refuses the Unsub
// whole, and the data keeps coming.)
func TestOwnUnsubReadableByInt32Backend(t *testing.T) {
	ib := newDotnetBackend(t, true)
	e := newTestEnv(t, func(c *Config) {
		c.Backend.Upstreams = []string{ib.url()}
		c.Backend.TransactionIDs = TransactionIDsInt32
	})
	c := e.dial(bearer(tokDemo)) // Market, News
	subscribe(t, c, "News", "News!ASX", 1)
	narrower := madeUpToken("u-demo", []string{policy.ScopeMarket}, 0)
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Auth","Topic":"AuthToken","TransactionID":2,"Data":{"Provider":"Bearer","AccessToken":"`+narrower+`"}}`)); err != nil {
		t.Fatal(err)
	}
	before := tick(t, c, 3)
	if !slices.Contains(before, errorMsg("News", "News!ASX", 1, zenith.CodeAuthority)) {
		t.Fatalf("the gateway did not end News!ASX for the client: %q", before)
	}
	sent := false
	for _, m := range ib.received() {
		sent = sent || m == `{"Controller":"News","Topic":"News!ASX","Action":"Unsub","TransactionID":-2147483648}`
	}
	if !sent {
		t.Errorf("the gateway sent no Unsub of its own from the int32 range: %q", ib.received())
	}
	for _, m := range slices.Concat(before, tick(t, c, 4)) {
		if strings.Contains(m, `"Topic":"News!ASX","Action":"Publish"`) || strings.Contains(m, "Data.Deserialise") {
			t.Errorf("after the scope was lost: %s", m)
		}
	}
	if n := ib.holds(); n != 0 {
		t.Errorf("the backend holds %d subscriptions", n)
	}
	// A client's TransactionID outside int32 is refused as the backend
	// would refuse it; the reserved range is refused as the gateway's.
	if got := roundTrip(t, c, `{"Controller":"Market","Topic":"Tick","TransactionID":2147483648}`); got != `{"Controller":"Market","Topic":"Tick","Action":"Error","TransactionID":2147483648,"Data":"Data.Deserialise"}` {
		t.Errorf("TransactionID 2^31: %s", got)
	}
	if got := roundTrip(t, c, `{"Controller":"Market","Topic":"Tick","TransactionID":-2147400001}`); got != `{"Controller":"Market","Topic":"Tick","Action":"Error","TransactionID":-2147400001,"Data":"Session"}` {
		t.Errorf("a reserved TransactionID: %s", got)
	}
}

// TestUnsubTheBackendCannotRead: an Unsub the backend could not read
// (Data nested deeper than 64, System.Text.Json's and Newtonsoft's
// default; a TransactionID past what it reads, here int32's) is refused by
// the gateway too, and the backend gets the client's Unsub only as the
// gateway writes its own (no Data): a subscription never stays open at
// the backend while the gateway forgets it. So a scope lost on
// re-authentication still ends it, and Limits.Subscriptions still counts
// it.
func TestUnsubTheBackendCannotRead(t *testing.T) {
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	unsubs := []struct {
		name  string
		int32 bool
		msg   func(topic string, tid int) string
	}{
		{"Data nested 100 deep", false, func(topic string, tid int) string {
			return `{"Controller":"News","Topic":"` + topic + `","Action":"Unsub","TransactionID":` + strconv.Itoa(tid) + `,"Data":` + deep + `}`
		}},
		{"TransactionID over int32", true, func(topic string, _ int) string {
			return `{"Controller":"News","Topic":"` + topic + `","Action":"Unsub","TransactionID":2147483648}`
		}},
	}
	env := func(t *testing.T, db *modelBackend, int32 bool, subs int) *testEnv {
		return newTestEnv(t, func(c *Config) {
			c.Backend.Upstreams = []string{db.url()}
			if int32 {
				c.Backend.TransactionIDs = TransactionIDsInt32
			}
			if subs > 0 {
				c.Limits.Default.Subscriptions = subs
			}
		})
	}
	for _, u := range unsubs {
		t.Run(u.name+"/scope lost", func(t *testing.T) {
			db := newDotnetBackend(t, u.int32)
			c := env(t, db, u.int32, 0).dial(bearer(tokDemo)) // Market, News
			subscribe(t, c, "News", "News!ASX", 1)
			if got := roundTrip(t, c, u.msg("News!ASX", 2)); !strings.Contains(got, `"Data":"Data.Deserialise"`) {
				t.Fatalf("the Unsub: %s", got)
			}
			narrower := madeUpToken("u-demo", []string{policy.ScopeMarket}, 0)
			if got := roundTrip(t, c, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":4,"Data":{"Provider":"Bearer","AccessToken":"`+narrower+`"}}`); !strings.Contains(got, `"Result":"Success"`) {
				t.Fatalf("re-authentication: %s", got)
			}
			for _, m := range tick(t, c, 5) {
				if strings.Contains(m, `"Topic":"News!ASX","Action":"Publish"`) {
					t.Errorf("News data reached a session without the News scope: %s", m)
				}
			}
			if n := db.holds(); n != 0 {
				t.Errorf("the backend holds %d subscriptions", n)
			}
		})
		t.Run(u.name+"/subscription limit", func(t *testing.T) {
			db := newDotnetBackend(t, u.int32)
			const limit = 3
			c := env(t, db, u.int32, limit).dial(bearer(tokDemo))
			for i := range 2 * limit {
				topic := "News!S" + strconv.Itoa(i)
				got := roundTrip(t, c, subMsg("News", topic, 10+i))
				if i >= limit {
					if !strings.Contains(got, `"Data":"Limited"`) {
						t.Errorf("Sub %d of a session limited to %d: %s", i+1, limit, got)
					}
					continue
				}
				if got := roundTrip(t, c, u.msg(topic, 100+i)); !strings.Contains(got, "Data.Deserialise") {
					t.Fatalf("Unsub: %s", got)
				}
			}
			tick(t, c, 1000)
			if n := db.holds(); n != limit {
				t.Errorf("the backend holds %d subscriptions for a session limited to %d", n, limit)
			}
		})
	}
}

// --- the policy's no-scope rows against a lenient backend --------------------

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

// TestAttackPolicyNoScopeRowsLenientBackend: HELD. A session holding no
// scope at all sends messages aimed at the rows that need none (Configure
// and QueryConfigure on any controller, every Channel topic, the listed
// free topics), spelled so that a backend that trims, folds case, skips
// NULs or reads enum numbers could take them for another pair. Whatever
// the gateway forwards, read that lenient way, is still a pair the
// default policy allows without a scope; the exact spellings are
// forwarded (the test can see a forward).
func TestAttackPolicyNoScopeRowsLenientBackend(t *testing.T) {
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
	atkPipeline(t, c, append(msgs, marker)...)
	atkReadUntil(t, c, marker)
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

// --- the Auth controller with the real verifier -----------------------------

// realVerifier is the identity server's verifier as the gateway's
// Verifier, as the Caddy module wires it.
type realVerifier struct{ v *verify.Verifier }

func (r realVerifier) VerifyAccessToken(ctx context.Context, token string) (Identity, error) {
	id, err := r.v.Verify(ctx, token)
	if err != nil {
		if ve, ok := errors.AsType[*verify.Error](err); ok && ve.Reason != verify.ReasonKeysUnavailable {
			return Identity{}, &Refusal{Reason: string(ve.Reason)}
		}
		return Identity{}, err
	}
	return Identity{Subject: id.Subject, ClientID: id.ClientID, Scopes: id.Scopes, Expiry: id.Expiry, Token: token}, nil
}

// TestAttackPolicyAuthTokenHostileTokens: HELD. Every hostile token of
// the verifier's table (an id_token, another audience, another issuer,
// alg none, foreign keys, a second spelling of a good token, an opaque
// string such as a refresh token, ...) sent in an AuthToken message, as
// raw text and Base-64 encoded (the rule of docs/api-surface.md §2.4), gets
// Result Reject (Rejected in the motif profile) and opens no backend leg;
// a good token in either spelling is accepted, and its AccessToken is
// returned only to a client ReturnAccessToken names.
func TestAttackPolicyAuthTokenHostileTokens(t *testing.T) {
	const issuerURL = "https://issuer.test"
	is := verifytest.NewIssuer(t, issuerURL, time.Now)
	v, err := verify.New(t.Context(), verify.Config{Issuer: issuerURL, Keys: is})
	if err != nil {
		t.Fatal(err)
	}
	for _, motif := range []bool{false, true} {
		e := newTestEnv(t, func(c *Config) {
			c.Hooks.Verifier, c.Hooks.Now = realVerifier{v}, time.Now
			c.Profile.Motif = motif
			c.Auth.ReturnAccessToken = []string{"motif-web"}
		})
		topic, reject := `"Topic":"Identify"`, `{"Result":"Reject"}`
		if motif {
			topic, reject = `"Topic":"AuthToken"`, `{"Result":"Rejected"}`
		}
		send := func(tok string) string {
			c := e.dial(nil)
			q, _ := json.Marshal(tok)
			return roundTrip(t, c, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":1,"Data":{"Provider":"Bearer","AccessToken":`+string(q)+`}}`)
		}
		for _, hc := range is.Hostile(policy.ScopeMarket, policy.ScopeTrading) {
			for _, spelling := range []string{hc.Token, base64.StdEncoding.EncodeToString([]byte(hc.Token))} {
				got := send(spelling)
				if !strings.Contains(got, topic) || !strings.HasSuffix(got, `"Data":`+reject+`}`) {
					t.Errorf("motif %v, %s: %s", motif, hc.Name, got)
				}
			}
		}
		if n := e.backend.upgrades(); n != 0 {
			t.Fatalf("motif %v: %d backend legs opened for refused tokens", motif, n)
		}
		good := is.Token("alice", policy.ScopeMarket) // client test-client: not in ReturnAccessToken
		for _, spelling := range []string{good, base64.StdEncoding.EncodeToString([]byte(good))} {
			got := send(spelling)
			if !strings.Contains(got, `"Result":"Success"`) || strings.Contains(got, `"AccessToken"`) {
				t.Errorf("motif %v, good token: %s", motif, got)
			}
		}
	}
}
