package wsauth

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

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
// whole, and the data keeps coming.) It failed before transaction_ids
// was a setting: the gateway's own Unsub was unreadable to this backend.
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
// it. It failed when such an Unsub was forwarded as the client wrote it:
// the subscription stayed open at the backend, and untracked here.
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
