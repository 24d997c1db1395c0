package marketdata

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"
	"time"
)

// fastTicks is the tick interval of the tests that want updates.
const fastTicks = 2 * time.Millisecond

// cents is the form of every price on the wire.
var cents = regexp.MustCompile(`^-?[0-9]+\.[0-9]{2}$`)

// priceMembers are the members of securityData that are prices.
var priceMembers = []string{"Open", "Close", "High", "Low", "Last", "BestBid", "BestAsk", "ValueTraded"}

// checkPrices fails unless every price member of data present is a JSON
// number with exactly two decimals, and returns them by name.
func checkPrices(t *testing.T, data json.RawMessage) map[string]json.Number {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var members map[string]any
	if err := dec.Decode(&members); err != nil {
		t.Fatalf("Data %s: %v", data, err)
	}
	prices := map[string]json.Number{}
	for _, name := range priceMembers {
		v, ok := members[name]
		if !ok {
			continue
		}
		n, isNumber := v.(json.Number)
		if !isNumber || !cents.MatchString(string(n)) {
			t.Errorf("%s is %v in %s, want a number of whole cents", name, v, data)
		}
		prices[name] = n
	}
	return prices
}

func TestSecuritySubscription(t *testing.T) {
	cfg := testConfig()
	cfg.TickInterval = fastTicks
	_, srv := start(t, cfg)
	c := dial(t, srv, "")

	c.send(`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","TransactionID":1,"Confirm":true}`)
	m := c.next()
	if m.Controller != "Market" || m.Topic != "Security!BHP.ASX" || m.Action != actionSub || !m.Confirm || *m.TransactionID != 1 {
		t.Fatalf("got %s, want the Sub confirmation", m.raw)
	}
	snapshot := c.next()
	if snapshot.Topic != "Security!BHP.ASX" || snapshot.Action != actionSub || snapshot.Confirm || snapshot.TransactionID != nil {
		t.Fatalf("got %s, want the snapshot", snapshot.raw)
	}
	var snap securityData
	snapshot.data(t, &snap)
	if snap.Code != "BHP" || snap.Market != "ASX" || snap.Name != "BHP Group Limited" || snap.Currency != "AUD" ||
		snap.Close == nil || *snap.Close != 4512 || snap.Open == nil {
		t.Errorf("snapshot %s", snapshot.raw)
	}
	if p := checkPrices(t, snapshot.Data); len(p) != len(priceMembers) {
		t.Errorf("snapshot has prices %v, want all of %v", p, priceMembers)
	}

	// Updates follow, one per tick, each a trade.
	trades := snap.NumberOfTrades
	for range 3 {
		m := c.next()
		if m.Topic != "Security!BHP.ASX" || m.Action != actionSub || m.Confirm || m.TransactionID != nil {
			t.Fatalf("got %s, want an update", m.raw)
		}
		checkPrices(t, m.Data)
		var u securityData
		m.data(t, &u)
		if u.NumberOfTrades != trades+1 || u.Code != "" || u.Close != nil {
			t.Errorf("update %s after %d trades", m.raw, trades)
		}
		if u.BestBid >= u.Last || u.BestAsk <= u.Last || u.Low > u.Last || u.High < u.Last {
			t.Errorf("update %s: prices out of order", m.raw)
		}
		trades = u.NumberOfTrades
	}

	// Unsub: confirmed, then no update of BHP. CBA's updates prove ticks
	// go on: the market queues each tick's updates in symbol order.
	c.send(`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Unsub","TransactionID":2,"Confirm":true}`)
	m = c.nextOn("Security!BHP.ASX")
	for m.Action == actionSub && !m.Confirm { // updates queued before the Unsub
		m = c.nextOn("Security!BHP.ASX")
	}
	if m.Action != actionUnsub || !m.Confirm || *m.TransactionID != 2 {
		t.Fatalf("got %s, want the Unsub confirmation", m.raw)
	}
	c.send(`{"Controller":"Market","Topic":"Security!CBA.ASX","Action":"Sub","Confirm":true}`)
	for i := 0; i < 2+3; i++ { // confirmation, snapshot, three updates
		if m := c.next(); m.Topic != "Security!CBA.ASX" {
			t.Fatalf("got %s after the Unsub of BHP", m.raw)
		}
	}
}

// TestFanOut subscribes several clients to one symbol: each gets the same
// updates.
func TestFanOut(t *testing.T) {
	cfg := testConfig()
	cfg.TickInterval = fastTicks
	_, srv := start(t, cfg)
	clients := make([]*client, 4)
	for i := range clients {
		clients[i] = dial(t, srv, "")
		clients[i].send(`{"Controller":"Market","Topic":"Security!CSL.ASX","Action":"Sub","Confirm":true}`)
		clients[i].next() // confirmation
		clients[i].next() // snapshot
	}
	byTrade := map[int64]string{}
	for _, c := range clients {
		for range 5 {
			m := c.next()
			var u securityData
			m.data(t, &u)
			if prev, ok := byTrade[u.NumberOfTrades]; ok && prev != string(m.Data) {
				t.Errorf("trade %d: %s and %s", u.NumberOfTrades, prev, m.Data)
			}
			byTrade[u.NumberOfTrades] = string(m.Data)
		}
	}
}

// TestSubscribeTwice checks that a second Sub of a symbol is confirmed
// again with a fresh snapshot, and that the client still gets one update
// per trade.
func TestSubscribeTwice(t *testing.T) {
	cfg := testConfig()
	cfg.TickInterval = fastTicks
	_, srv := start(t, cfg)
	c := dial(t, srv, "")
	for range 2 {
		c.send(`{"Controller":"Market","Topic":"Security!WBC.ASX","Action":"Sub","Confirm":true}`)
	}
	confirmations, snapshots := 0, 0
	var trades int64 = -1
	for updates := 0; updates < 5 || confirmations < 2 || snapshots < 2; {
		m := c.next()
		var d securityData
		switch {
		case m.Confirm:
			confirmations++
			continue
		case m.Data != nil:
			m.data(t, &d)
		default:
			t.Fatalf("got %s", m.raw)
		}
		if d.Code != "" {
			snapshots++
		} else {
			updates++
			if trades >= 0 && d.NumberOfTrades != trades+1 {
				t.Fatalf("update after trade %d is trade %d", trades, d.NumberOfTrades)
			}
		}
		trades = d.NumberOfTrades
	}
}

// TestWalkDeterministic checks that the prices depend only on the seed
// and the number of steps, stay whole cents within 20% of the previous
// close, and differ between seeds.
func TestWalkDeterministic(t *testing.T) {
	run := func(seed uint64) []Price {
		m := newMarket(seed)
		var lasts []Price
		for range 2000 {
			m.step()
			for _, s := range m.securities {
				lasts = append(lasts, s.last)
				if s.last < s.close*8/10 || s.last > s.close*12/10 {
					t.Fatalf("%s at %v, previous close %v", s.code, s.last, s.close)
				}
			}
		}
		return lasts
	}
	a, b, other := run(42), run(42), run(43)
	moved := false
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("price %d: %v and %v with the same seed", i, a[i], b[i])
		}
		moved = moved || a[i] != a[i%len(demoSecurities)]
	}
	if !moved {
		t.Error("prices never moved")
	}
	same := 0
	for i := range a {
		if a[i] == other[i] {
			same++
		}
	}
	if same == len(a) {
		t.Error("seeds 42 and 43 give the same prices")
	}
}

func TestPriceJSON(t *testing.T) {
	tests := []struct {
		p    Price
		want string
	}{
		{0, "0.00"},
		{5, "0.05"},
		{10, "0.10"},
		{4510, "45.10"},
		{4512, "45.12"},
		{-1, "-0.01"},
		{-4512, "-45.12"},
		{1<<63 - 1, "92233720368547758.07"},
		{-1 << 63, "-92233720368547758.08"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			b, err := json.Marshal(tt.p)
			if err != nil || string(b) != tt.want {
				t.Errorf("Marshal(%d) = %s, %v; want %s", int64(tt.p), b, err, tt.want)
			}
			if tt.p.String() != tt.want {
				t.Errorf("String() = %s", tt.p.String())
			}
		})
	}
}

func TestPriceUnmarshal(t *testing.T) {
	tests := []struct {
		in   string
		want Price
		ok   bool
	}{
		{"45.12", 4512, true},
		{"45.1", 4510, true},
		{"45", 4500, true},
		{"0.05", 5, true},
		{"-0.01", -1, true},
		{"92233720368547758.07", 1<<63 - 1, true},
		{"-92233720368547758.08", -1 << 63, true},
		{"92233720368547758.08", 0, false},
		{"45.123", 0, false},
		{"4.5e1", 0, false},
		{"045.12", 0, false},
		{"45.", 0, false},
		{".5", 0, false},
		{"-", 0, false},
		{`"45.12"`, 0, false},
		{"null", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var p Price
			err := p.UnmarshalJSON([]byte(tt.in))
			if (err == nil) != tt.ok || (tt.ok && p != tt.want) {
				t.Errorf("UnmarshalJSON(%s) = %d, %v; want %d, ok %v", tt.in, int64(p), err, int64(tt.want), tt.ok)
			}
		})
	}
}

// TestAppendUpdate checks the hand-written update message against
// encoding/json's, step after step.
func TestAppendUpdate(t *testing.T) {
	m := newMarket(3)
	for range 500 {
		m.step()
		for _, s := range m.securities {
			want := encode(reply{Controller: "Market", Topic: s.topic, Action: actionSub, Data: s.update()})
			if got := s.appendUpdate(nil); !bytes.Equal(got, want) {
				t.Fatalf("appendUpdate:\n%s\nencoding/json:\n%s", got, want)
			}
		}
	}
}
