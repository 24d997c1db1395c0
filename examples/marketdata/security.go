package marketdata

import (
	"encoding/json"
	"strconv"
)

// security is one symbol's state. Its fields are guarded by market.mu.
type security struct {
	code, venue, name, currency string
	topic                       string // "Security!<code>.<venue>"
	step                        Price  // the price move of one walk step
	updateHead                  []byte // the Security update message up to its first price

	close, open, high, low, last, bid, ask Price
	bidQty, askQty, volume, trades         int64
	valueTraded                            Price
	trend                                  string

	// The Depth book, set by market.book after each step: bids from the
	// best (highest) down, asks from the best (lowest) up.
	bids, asks [depthLevels]level
}

func newSecurity(code, venue, name string, closePrice Price) *security {
	step := max(1, closePrice/2000) // about 0.05% of the price
	s := &security{
		code: code, venue: venue, name: name, currency: currencyOf(venue),
		topic: "Security!" + code + "." + venue,
		step:  step,
		close: closePrice, open: closePrice, high: closePrice, low: closePrice, last: closePrice,
		bid: closePrice - step, ask: closePrice + step,
		bidQty: 1000, askQty: 1000,
		trend: trendNone,
	}
	topic, _ := json.Marshal(s.topic) // a string always marshals
	s.updateHead = []byte(`{"Controller":"Market","Topic":` + string(topic) + `,"Action":"Sub","Data":{"High":`)
	return s
}

// quoteTopic is s's Security topic.
func (s *security) quoteTopic() *topic {
	return &topic{
		name: s.topic, kind: kindSecurity, venue: s.venue,
		snapshot: func() any { return s.snapshot() },
		update:   func() []byte { return s.appendUpdate(make([]byte, 0, 320)) },
		subs:     map[*conn]struct{}{},
	}
}

// Trends of a security's last price.
const (
	trendNone = "None"
	trendUp   = "Up"
	trendDown = "Down"
)

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
	d.Code, d.Market, d.Exchange, d.Name = s.code, s.venue, s.venue, s.name
	d.Class, d.Currency, d.TradingState = "Market", s.currency, "Normal"
	d.Open, d.Close = &open, &closePrice
	return d
}
