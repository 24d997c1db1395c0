package wsauth

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// TestNoSpellingReachesAReservedTransactionID: No spelling of a
// TransactionID (number forms, strings, escaped or case-variant names,
// duplicates) reaches the backend such that a lenient parser (Go's
// encoding/json, case-insensitive, float64) reads a reserved value.
func TestNoSpellingReachesAReservedTransactionID(t *testing.T) {
	const r = "9007199254000001"
	spellings := []string{
		`"TransactionID":` + r,
		`"TransactionID":-` + r,
		`"TransactionID":` + r + `.0`,
		`"TransactionID":9.007199254000001e15`,
		`"TransactionID":9007199254000001e0`,
		`"TransactionID":90071992540000010e-1`,
		`"TransactionID":90071992540000010E-1`,
		`"TransactionID":0` + r,
		`"TransactionID":"` + r + `"`,
		`"TransactionID":  ` + r + `  `,
		`"TransactionID":9007199254740993`,
		`"TransactionID":18446744073709551616`,
		`"TransactionID":1e400`,
		`"TransactionID":-0`,
		`"transactionID":` + r,
		`"TransactionId":` + r,
		`"TRANSACTIONID":` + r,
		`"Transaction_ID":` + r,
		`"Transaction\u0049D":` + r,
		`"\u0054ransactionID":` + r,
		`"TransactionID":1,"TransactionID":` + r,
		`"TransactionID":1,"transactionid":` + r,
		`"TransactionID ":` + r,
		`"Data":{"TransactionID":` + r + `},"TransactionID":1`,
	}
	e := newTestEnv(t, func(c *Config) { c.Limits.Default = policy.Limits{MessagesPerSecond: 1e6, Burst: 1 << 20} })
	c := e.dial(bearer(tokDemo))
	var msgs []string
	for _, sp := range spellings {
		msgs = append(msgs, `{"Controller":"Market","Topic":"Echo",`+sp+`}`, `{"Controller":"Market","Topic":"Security!X","Action":"Sub",`+sp+`}`)
	}
	marker := `{"Controller":"Market","Topic":"Echo","TransactionID":5}`
	writePipelined(t, c, append(msgs, marker)...)
	readUntil(t, c, marker)
	for _, m := range e.backend.received() {
		var v map[string]any
		d := json.NewDecoder(strings.NewReader(m))
		if d.Decode(&v) != nil {
			continue
		}
		for k, x := range v {
			if !strings.EqualFold(strings.ReplaceAll(k, "_", ""), "transactionid") {
				continue
			}
			var f float64
			switch x := x.(type) {
			case float64:
				f = x
			case string:
				f, _ = strconv.ParseFloat(x, 64)
			}
			if f < 0 {
				f = -f
			}
			if f >= float64(schemeInt53.base) && f < float64(schemeInt53.base+schemeInt53.span) {
				t.Errorf("the backend got a reserved TransactionID: %s", m)
			}
		}
	}
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

// TestTransactionIDsADoubleHolds: a client's TransactionID beyond 2^53 - 1
// is refused (Error/Data.Deserialise) and never reaches the backend: a
// backend that reads numbers as doubles (JavaScript, a .NET double) would
// round 90071992539999999 into the reserved range, where the gateway,
// once it has sent a message of its own, drops the echo as its own
// answer. One within the range, next to the reserved prefix, comes back.
// It failed when such a TransactionID was forwarded: the rounding
// backend's echo was swallowed as an answer to the gateway.
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

// TestReservedTransactionIDFromClient: a client message whose
// TransactionID's digits begin with the reserved prefix is refused with
// Error/Session and not forwarded (nor, for a Sub, tracked).
func TestReservedTransactionIDFromClient(t *testing.T) {
	for _, tt := range []struct {
		tid     string
		refused bool
	}{
		{"9007199254000000", true},
		{"9007199254740990", true},
		{"9007199254", true},
		{"-9007199254000001", true},
		{"900719925", false},
		{"1900719925400000", false},
		{"9007199253999999", false},
		{"0", false},
		{"900719925474099100", true}, // past 2^53 - 1 too: malformed
	} {
		t.Run(tt.tid, func(t *testing.T) {
			e := newTestEnv(t, nil)
			c := e.dial(bearer(tokDemo))
			for _, action := range []string{zenith.ActionPublish, zenith.ActionSub} {
				msg := `{"Controller":"Market","Topic":"Echo","Action":"` + action + `","TransactionID":` + tt.tid + `}`
				got := roundTrip(t, c, msg)
				want := msg
				switch {
				case len(strings.TrimPrefix(tt.tid, "-")) > 16: // past 2^53 - 1
					want = `{"Controller":"Market","Topic":"Echo","Action":"Error","Data":"Data.Deserialise"}`
				case tt.refused:
					want = `{"Controller":"Market","Topic":"Echo","Action":"Error","TransactionID":` + tt.tid + `,"Data":"Session"}`
				case action == zenith.ActionSub:
					want = `{"Controller":"Market","Topic":"Echo","Action":"Publish","TransactionID":` + tt.tid + `,"Data":"snapshot"}`
				}
				if got != want {
					t.Fatalf("%s:\n got %s\nwant %s", action, got, want)
				}
				if n := e.backend.countExact(msg); tt.refused == (n != 0) {
					t.Fatalf("%s reached the backend %d times", action, n)
				}
			}
			if n := e.metrics.get(func(m *fakeMetrics) int { return m.subs["Market"] }); tt.refused == (n != 0) {
				t.Fatalf("subscriptions tracked: %d", n)
			}
		})
	}
}

// TestBackendAnswersToTheGatewayAreDropped: once the gateway has sent the
// backend a message of its own, backend messages carrying a reserved
// TransactionID never reach the client; others do, in order; the same
// with the backend's messages compressed and passed on so. It failed,
// compressed, with relayAsCompressed's search left out.
func TestBackendAnswersToTheGatewayAreDropped(t *testing.T) {
	tests := []struct {
		name, msg string
		dropped   bool
	}{
		{"the gateway's Unsub confirmed", `{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Unsub","TransactionID":9007199254000001,"Confirm":true}`, true},
		{"one space after the colon", `{"Controller":"Market","TransactionID": 9007199254000002}`, true},
		{"first member, highest", `{"TransactionID":9007199254740990,"Controller":"Market"}`, true},
		{"after an earlier near miss", `{"Data":9007199254,"TransactionID":9007199254000003}`, true},
		{"the client's own", `{"Controller":"Market","TransactionID":9007199253}`, false},
		{"the digits in a string", `{"Controller":"Market","Data":"TransactionID 9007199254000001"}`, false},
		{"another member", `{"Controller":"Market","OrderID":9007199254000001}`, false},
		{"negative", `{"Controller":"Market","TransactionID":-9007199254000001}`, false},
		{"a longer prefix", `{"Controller":"Market","TransactionID":19007199254000001}`, false},
	}
	for _, tt := range tests {
		if got := answersGateway([]byte(tt.msg), schemeInt53.prefix); got != tt.dropped {
			t.Errorf("%s: answersGateway = %v", tt.name, got)
		}
	}
	for _, tt := range []struct {
		msg     string
		dropped bool
	}{ // int32's
		{`{"Controller":"Market","Action":"Unsub","TransactionID":-2147483648,"Confirm":true}`, true},
		{`{"TransactionID": -2147400000}`, true},
		{`{"TransactionID":-2147399999}`, false},
		{`{"TransactionID":2147483647}`, false},
		{`{"TransactionID":9007199254000001}`, false},
	} {
		if got := answersGateway([]byte(tt.msg), schemeInt32.prefix); got != tt.dropped {
			t.Errorf("int32, %s: answersGateway = %v", tt.msg, got)
		}
	}
	// With the backend's messages compressed (each one, as gorilla
	// compresses them) and passed on compressed to a client that
	// negotiated permessage-deflate, they are searched decompressed.
	for _, compressed := range []bool{false, true} {
		t.Run(fmt.Sprintf("compressed %v", compressed), func(t *testing.T) {
			droppedWith(t, tests, compressed)
		})
	}
}

// droppedWith is TestBackendAnswersToTheGatewayAreDropped's socket part,
// the backend's messages compressed or not.
func droppedWith(t *testing.T, tests []struct {
	name, msg string
	dropped   bool
}, compressed bool) {
	e := newTestEnv(t, func(c *Config) { c.Backend.Compression = compressed })
	var rec *rawReads
	c, _, err := e.tryDial(bearer(tokDemo), compressingDialer(&rec))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	says := make([]string, 0, len(tests)+1)
	var all, want []string
	for _, tt := range tests {
		says = append(says, strconv.Quote(tt.msg))
		all = append(all, tt.msg)
		if !tt.dropped {
			want = append(want, tt.msg)
		}
	}
	end := `{"Controller":"Zenith","Topic":"End"}`
	says = append(says, strconv.Quote(end))
	say := func() []string {
		t.Helper()
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Say","Data":[`+strings.Join(says, ",")+`]}`)); err != nil {
			t.Fatal(err)
		}
		var got []string
		for m := readMsg(t, c); m != end; m = readMsg(t, c) {
			got = append(got, m)
		}
		return got
	}
	// Before the gateway has sent the backend a message of its own,
	// nothing can answer it: the backend's messages are not searched.
	if got := say(); strings.Join(got, "\n") != strings.Join(all, "\n") {
		t.Fatalf("before the gateway's own message, the client got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(all, "\n"))
	}
	// The gateway sends its own Unsub, as at a lapse; from then on the
	// answers are dropped.
	e.gw.mu.Lock()
	for s := range e.gw.sessions {
		s.mu.Lock()
		if err := s.unsubBackendLocked(subKey{"Market", "Security!BHP.ASX"}); err != nil {
			t.Error(err)
		}
		if err := s.auth.bw.Flush(); err != nil {
			t.Error(err)
		}
		s.mu.Unlock()
	}
	e.gw.mu.Unlock()
	eventually(t, "the gateway's Unsub at the backend", func() bool { return e.backend.gatewayUnsubs("Market", "Security!BHP.ASX") == 1 })
	if got := say(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the client got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	passed := 0
	for _, z := range rec.frames(t) {
		if z {
			passed++
		}
	}
	if compressed != (passed > 0) {
		t.Fatalf("%d messages passed on compressed", passed)
	}
}
