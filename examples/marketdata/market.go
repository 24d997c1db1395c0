package marketdata

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// The demo market: one exchange, a few of its best-known symbols, prices
// that move by a seeded pseudo-random walk.
const (
	demoMarket   = "ASX"
	demoCurrency = "AUD"
)

// demoSecurities are the symbols of the demo and their starting prices
// (the previous close), in cents. Every price is at least $2, so the
// whole-cent steps of the walk are valid ASX ticks.
var demoSecurities = []struct {
	code, name string
	close      Price
}{
	{"BHP", "BHP Group Limited", 4512},
	{"CBA", "Commonwealth Bank of Australia", 15230},
	{"CSL", "CSL Limited", 28540},
	{"NAB", "National Australia Bank Limited", 3785},
	{"WBC", "Westpac Banking Corporation", 3120},
	{"WES", "Wesfarmers Limited", 7215},
}

// security is one symbol's state. Its fields are guarded by market.mu.
type security struct {
	code, name string
	topic      string // "Security!<code>.<market>"
	step       Price  // the price move of one walk step
	updateHead []byte // the update message up to its first price

	close, open, high, low, last, bid, ask Price
	bidQty, askQty, volume, trades         int64
	valueTraded                            Price
	trend                                  string

	subs map[*conn]struct{} // connections subscribed to topic
}

// market simulates the demo market and fans its updates out to the
// subscribed connections.
//
// Goroutines: the ticker goroutine (run) calls step; connections' reader
// goroutines call subscribe, unsubscribe and remove. Everything behind
// mu: the random source, every security's fields and subscribers. A
// message is queued to a connection under mu, so a subscriber receives
// the Sub confirmation and the snapshot before any update, and nothing
// after the Unsub confirmation.
type market struct {
	mu         sync.Mutex
	rng        *rand.Rand
	securities []*security
	byTopic    map[string]*security // immutable after newMarket
}

func newMarket(seed uint64) *market {
	m := &market{
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		byTopic: map[string]*security{},
	}
	for _, d := range demoSecurities {
		s := &security{
			code: d.code, name: d.name, topic: "Security!" + d.code + "." + demoMarket,
			step:  max(1, d.close/2000), // about 0.05% of the price
			close: d.close, open: d.close, high: d.close, low: d.close, last: d.close,
			bid: d.close - max(1, d.close/2000), ask: d.close + max(1, d.close/2000),
			bidQty: 1000, askQty: 1000,
			trend: trendNone,
			subs:  map[*conn]struct{}{},
		}
		topic, _ := json.Marshal(s.topic) // a string always marshals
		s.updateHead = []byte(`{"Controller":"Market","Topic":` + string(topic) + `,"Action":"Sub","Data":{"High":`)
		m.securities = append(m.securities, s)
		m.byTopic[s.topic] = s
	}
	return m
}

// Trends of a security's last price.
const (
	trendNone = "None"
	trendUp   = "Up"
	trendDown = "Down"
)

// run steps the market every interval until stop is closed, then closes
// done.
func (m *market) run(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			contain.Point("demo.market")
			m.step()
		case <-stop:
			return
		}
	}
}

// step moves every security by one walk step (one trade) and queues an
// update to each subscriber. Each update is encoded once, whatever the
// number of subscribers.
func (m *market) step() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.securities {
		m.walk(s)
		if len(s.subs) == 0 {
			continue
		}
		msg := s.appendUpdate(make([]byte, 0, 320))
		for c := range s.subs {
			c.enqueue(msg)
		}
	}
}

// walk makes one trade of s at a price up to two steps from the last one,
// kept within 20% of the previous close. The random source is drawn the
// same number of times per security and step, so the prices depend only
// on the seed and the number of steps.
func (m *market) walk(s *security) {
	move := Price(m.rng.IntN(5)-2) * s.step
	qty := int64(1+m.rng.IntN(50)) * 100
	s.bidQty = int64(1+m.rng.IntN(100)) * 100
	s.askQty = int64(1+m.rng.IntN(100)) * 100
	next := s.last + move
	if next < s.close*8/10 || next > s.close*12/10 {
		next = s.last - move
	}
	switch {
	case next > s.last:
		s.trend = trendUp
	case next < s.last:
		s.trend = trendDown
	default:
		s.trend = trendNone
	}
	s.last = next
	s.high = max(s.high, next)
	s.low = min(s.low, next)
	s.bid, s.ask = next-s.step, next+s.step
	s.volume += qty
	s.trades++
	s.valueTraded += next * Price(qty)
}

// subscribe adds c to the subscribers of s and queues the confirmation
// and a snapshot. A second subscription is confirmed again and gets a
// fresh snapshot; c still gets one update per step.
func (m *market) subscribe(c *conn, req request, s *security) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !c.enqueue(subConfirm(req)) {
		return
	}
	if !c.enqueue(encode(reply{Controller: req.Controller, Topic: req.Topic, Action: actionSub, Data: s.snapshot()})) {
		return
	}
	s.subs[c] = struct{}{}
}

// unsubscribe removes c from the subscribers of s and, when the request
// asks for it, queues the confirmation: after it, c gets no update of s.
func (m *market) unsubscribe(c *conn, req request, s *security) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(s.subs, c)
	if req.Confirm {
		c.enqueue(unsubConfirm(req))
	}
}

// remove drops every subscription of c (c is closing).
func (m *market) remove(c *conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.securities {
		delete(s.subs, c)
	}
}

// securityData is the Data of a Market/Security message: the whole record
// in the snapshot that follows the Sub confirmation, the fields that move
// in each update.
type securityData struct {
	Code           string `json:"Code,omitempty"`
	Market         string `json:"Market,omitempty"`
	Exchange       string `json:"Exchange,omitempty"`
	Name           string `json:"Name,omitempty"`
	Class          string `json:"Class,omitempty"`
	Currency       string `json:"Currency,omitempty"`
	TradingState   string `json:"TradingState,omitempty"`
	Open           *Price `json:"Open,omitempty"`
	Close          *Price `json:"Close,omitempty"`
	High           Price  `json:"High"`
	Low            Price  `json:"Low"`
	Last           Price  `json:"Last"`
	Trend          string `json:"Trend"`
	BestBid        Price  `json:"BestBid"`
	BidQuantity    int64  `json:"BidQuantity"`
	BestAsk        Price  `json:"BestAsk"`
	AskQuantity    int64  `json:"AskQuantity"`
	NumberOfTrades int64  `json:"NumberOfTrades"`
	Volume         int64  `json:"Volume"`
	ValueTraded    Price  `json:"ValueTraded"`
}

func (s *security) update() *securityData {
	return &securityData{
		High: s.high, Low: s.low, Last: s.last, Trend: s.trend,
		BestBid: s.bid, BidQuantity: s.bidQty, BestAsk: s.ask, AskQuantity: s.askQty,
		NumberOfTrades: s.trades, Volume: s.volume, ValueTraded: s.valueTraded,
	}
}

// appendUpdate appends s's update message to b: the bytes that
// encode(reply{Controller: "Market", Topic: s.topic, Action: "Sub",
// Data: s.update()}) gives, written without reflection, since every
// subscribed symbol needs one per tick.
func (s *security) appendUpdate(b []byte) []byte {
	b = append(b, s.updateHead...)
	b = s.high.appendJSON(b)
	b = append(b, `,"Low":`...)
	b = s.low.appendJSON(b)
	b = append(b, `,"Last":`...)
	b = s.last.appendJSON(b)
	b = append(b, `,"Trend":"`...)
	b = append(b, s.trend...) // one of the trend constants: nothing to escape
	b = append(b, `","BestBid":`...)
	b = s.bid.appendJSON(b)
	b = append(b, `,"BidQuantity":`...)
	b = strconv.AppendInt(b, s.bidQty, 10)
	b = append(b, `,"BestAsk":`...)
	b = s.ask.appendJSON(b)
	b = append(b, `,"AskQuantity":`...)
	b = strconv.AppendInt(b, s.askQty, 10)
	b = append(b, `,"NumberOfTrades":`...)
	b = strconv.AppendInt(b, s.trades, 10)
	b = append(b, `,"Volume":`...)
	b = strconv.AppendInt(b, s.volume, 10)
	b = append(b, `,"ValueTraded":`...)
	b = s.valueTraded.appendJSON(b)
	return append(b, "}}"...)
}

func (s *security) snapshot() *securityData {
	d := s.update()
	open, closePrice := s.open, s.close
	d.Code, d.Market, d.Exchange, d.Name = s.code, demoMarket, demoMarket, s.name
	d.Class, d.Currency, d.TradingState = "Market", demoCurrency, "Normal"
	d.Open, d.Close = &open, &closePrice
	return d
}
