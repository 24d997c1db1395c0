package marketdata

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
)

// TestMarketTopics subscribes to Security and Depth topics of both
// venues: confirmation, a snapshot naming the symbol and its venue,
// updates without them, then the Unsub confirmation.
func TestMarketTopics(t *testing.T) {
	cfg := testConfig()
	cfg.TickInterval = fastTicks
	_, srv := start(t, cfg)
	tests := []struct {
		topic, code, venue string
		name, currency     string // Security only
		close              Price  // Security only
	}{
		{"Security!BHP.ASX", "BHP", "ASX", "BHP Group Limited", "AUD", 4512},
		{"Security!AIR.NZX", "AIR", "NZX", "Air New Zealand Limited", "NZD", 58},
		{"Security!FPH.NZX", "FPH", "NZX", "Fisher & Paykel Healthcare Corporation Limited", "NZD", 3545},
		{"Security!SPK.NZX", "SPK", "NZX", "Spark New Zealand Limited", "NZD", 262},
		{"Depth!CBA.ASX", "CBA", "ASX", "", "", 0},
		{"Depth!AIR.NZX", "AIR", "NZX", "", "", 0},
		{"Depth!SPK.NZX", "SPK", "NZX", "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.topic, func(t *testing.T) {
			c := dial(t, srv, "")
			c.send(`{"Controller":"Market","Topic":"` + tt.topic + `","Action":"Sub","TransactionID":1,"Confirm":true}`)
			m := c.next()
			if m.Controller != "Market" || m.Topic != tt.topic || m.Action != actionSub || !m.Confirm || *m.TransactionID != 1 {
				t.Fatalf("got %s, want the Sub confirmation", m.raw)
			}
			for i := range 3 { // the snapshot, then two updates
				m := c.next()
				if m.Topic != tt.topic || m.Action != actionSub || m.Confirm || m.TransactionID != nil {
					t.Fatalf("got %s, want data", m.raw)
				}
				if tt.name == "" {
					d := checkBook(t, m)
					code, venue := tt.code, tt.venue
					if i > 0 { // an update does not name the symbol
						code, venue = "", ""
					}
					if d.Code != code || d.Market != venue {
						t.Errorf("message %d: %s, want Code %q and Market %q", i, m.raw, code, venue)
					}
					continue
				}
				checkPrices(t, m.Data)
				var d securityData
				m.data(t, &d)
				if i > 0 {
					if d.Code != "" || d.Market != "" || d.Close != nil {
						t.Errorf("update %s names the symbol", m.raw)
					}
					continue
				}
				if d.Code != tt.code || d.Market != tt.venue || d.Exchange != tt.venue || d.Name != tt.name ||
					d.Currency != tt.currency || d.Close == nil || *d.Close != tt.close {
					t.Errorf("snapshot %s", m.raw)
				}
			}
			c.send(`{"Controller":"Market","Topic":"` + tt.topic + `","Action":"Unsub","TransactionID":2,"Confirm":true}`)
			m = c.nextOn(tt.topic)
			for m.Action == actionSub { // updates queued before the Unsub
				m = c.nextOn(tt.topic)
			}
			if m.Action != actionUnsub || !m.Confirm || *m.TransactionID != 2 {
				t.Fatalf("got %s, want the Unsub confirmation", m.raw)
			}
		})
	}
}

// checkBook decodes a Depth message and fails unless it is a whole book:
// depthLevels a side, prices in whole cents, bids falling and asks rising
// from a best bid below the best ask, quantities and counts positive.
func checkBook(t *testing.T, m message) depthData {
	t.Helper()
	var raw struct{ Bids, Asks []map[string]json.Number }
	dec := json.NewDecoder(bytes.NewReader(m.Data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("Data of %s: %v", m.raw, err)
	}
	for _, side := range [][]map[string]json.Number{raw.Bids, raw.Asks} {
		for _, l := range side {
			if !cents.MatchString(string(l["Price"])) {
				t.Errorf("price %s in %s, want a number of whole cents", l["Price"], m.raw)
			}
		}
	}
	var d depthData
	m.data(t, &d)
	if len(d.Bids) != depthLevels || len(d.Asks) != depthLevels {
		t.Fatalf("%s: %d bids and %d asks, want %d each", m.raw, len(d.Bids), len(d.Asks), depthLevels)
	}
	checkSides(t, d.Bids[:], d.Asks[:])
	return d
}

// checkSides fails unless bids fall and asks rise from a best bid below
// the best ask, every price, quantity and count positive.
func checkSides(t *testing.T, bids, asks []level) {
	t.Helper()
	if bids[0].Price >= asks[0].Price {
		t.Errorf("best bid %v at or above best ask %v", bids[0].Price, asks[0].Price)
	}
	for i := range bids {
		for _, l := range []level{bids[i], asks[i]} {
			if l.Price <= 0 || l.Quantity <= 0 || l.Count <= 0 {
				t.Errorf("level %d: %+v", i, l)
			}
		}
		if i > 0 && (bids[i].Price >= bids[i-1].Price || asks[i].Price <= asks[i-1].Price) {
			t.Errorf("levels %d and %d out of order: bids %+v, asks %+v", i-1, i, bids, asks)
		}
	}
}

// TestDepthMatchesQuote checks, step after step, that every symbol's
// book is well formed and that its best levels are the quote's BestBid
// and BestAsk with their quantities, so that Security and Depth agree.
func TestDepthMatchesQuote(t *testing.T) {
	m := newMarket(11)
	for step := range 1000 {
		for _, s := range m.securities {
			checkSides(t, s.bids[:], s.asks[:])
			if s.bids[0].Price != s.bid || s.bids[0].Quantity != s.bidQty ||
				s.asks[0].Price != s.ask || s.asks[0].Quantity != s.askQty {
				t.Fatalf("step %d, %s: best levels %+v %+v, quote %v×%d %v×%d",
					step, s.topic, s.bids[0], s.asks[0], s.bid, s.bidQty, s.ask, s.askQty)
			}
		}
		m.step()
	}
}

// TestMarketTopicErrors checks that a market-data topic whose argument
// names no listed symbol exactly gets Error "Operation.NoResult", and one
// asked with the wrong action "Operation.Unknown", each echoing the
// request, the connection staying open; a refused Sub is not counted.
func TestMarketTopicErrors(t *testing.T) {
	s, srv := start(t, testConfig())
	c := dial(t, srv, "")
	tests := []struct {
		name, topic, action, code string
	}{
		{"unknown venue", "Security!BHP.XYZ", actionSub, errNoResult},
		{"unknown venue, depth", "Depth!BHP.XYZ", actionSub, errNoResult},
		{"symbol of another venue", "Security!AIR.ASX", actionSub, errNoResult},
		{"symbol of another venue, depth", "Depth!BHP.NZX", actionSub, errNoResult},
		{"venue in lower case", "Security!AIR.nzx", actionSub, errNoResult},
		{"symbol in lower case", "Depth!spk.NZX", actionSub, errNoResult},
		{"no venue", "Depth!SPK", actionSub, errNoResult},
		{"empty venue", "Depth!SPK.", actionSub, errNoResult},
		{"empty code", "Depth!.NZX", actionSub, errNoResult},
		{"empty argument", "Depth!", actionSub, errNoResult},
		{"extra segment", "Security!BHP.ASX.NZX", actionSub, errNoResult},
		{"second argument", "Depth!BHP.ASX!X", actionSub, errNoResult},
		{"space", "Depth!BHP.ASX ", actionSub, errNoResult},
		{"look-alike venue", "Security!AIR.NZ\u0425", actionSub, errNoResult},
		{"publish to depth", "Depth!BHP.ASX", actionPublish, errUnknown},
		{"no argument", "Depth", actionSub, errUnknown},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			topic, _ := json.Marshal(tt.topic) // a string always marshals
			id := int64(i + 1)
			c.send(`{"Controller":"Market","Topic":` + string(topic) + `,"Action":"` + tt.action + `","TransactionID":` + strconv.FormatInt(id, 10) + `}`)
			m := c.next()
			if code := m.errorCode(t); code != tt.code {
				t.Errorf("code %q, want %q", code, tt.code)
			}
			if m.Controller != "Market" || m.Topic != tt.topic || !reflect.DeepEqual(m.TransactionID, &id) {
				t.Errorf("got %s, want Controller Market, Topic %q, TransactionID %d", m.raw, tt.topic, id)
			}
		})
	}
	if got := s.Subscriptions(); !reflect.DeepEqual(got, counts(nil)) {
		t.Errorf("Subscriptions() = %v after refused Subs, want none", got)
	}
}
