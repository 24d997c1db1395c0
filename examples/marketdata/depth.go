package marketdata

// depthLevels is how many price levels each side of a Depth book shows.
const depthLevels = 5

// level is one price level of a Depth book.
type level struct {
	Price    Price `json:"Price"`
	Quantity int64 `json:"Quantity"` // the shares bid or offered at Price
	Count    int64 `json:"Count"`    // the orders that make up Quantity
}

// depthData is the Data of a Market/Depth message: the whole book, every
// time (an update replaces the book, it does not patch it), with the
// symbol's Code and Market in the snapshot that follows the Sub
// confirmation only.
type depthData struct {
	Code   string  `json:"Code,omitempty"`
	Market string  `json:"Market,omitempty"`
	Bids   []level `json:"Bids"`
	Asks   []level `json:"Asks"`
}

// depthTopic is s's Depth topic.
func (s *security) depthTopic() *topic {
	name := "Depth!" + s.code + "." + s.venue
	return &topic{
		name: name, kind: kindDepth, venue: s.venue,
		snapshot: func() any {
			d := s.depth()
			d.Code, d.Market = s.code, s.venue
			return d
		},
		update: func() []byte {
			return encode(reply{Controller: "Market", Topic: name, Action: actionSub, Data: s.depth()})
		},
		subs: map[*conn]struct{}{},
	}
}

func (s *security) depth() *depthData {
	return &depthData{Bids: append([]level(nil), s.bids[:]...), Asks: append([]level(nil), s.asks[:]...)}
}

// book lays out s's Depth book around its quote: the best levels are the
// quote's BestBid and BestAsk with their quantities, the others a walk
// step apart with quantities drawn from the random source (the same
// number of draws every time, as walk does).
func (m *market) book(s *security) {
	for i := range depthLevels {
		bidQty, askQty := s.bidQty, s.askQty
		if i > 0 {
			bidQty = int64(1+m.rng.IntN(200)) * 100
			askQty = int64(1+m.rng.IntN(200)) * 100
		}
		off := Price(i) * s.step
		s.bids[i] = level{Price: s.bid - off, Quantity: bidQty, Count: 1 + bidQty/2500}
		s.asks[i] = level{Price: s.ask + off, Quantity: askQty, Count: 1 + askQty/2500}
	}
}
