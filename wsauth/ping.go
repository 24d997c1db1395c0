package wsauth

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// clientPings are the pings the gateway has sent the client and the
// client has not answered, oldest first, maxPingsOut at most. The client
// writer sends the pings (Send) and the client reader reads the pongs
// (Pong), so it has its own lock.
//
// Each ping carries a random tag, which the client learns only by reading
// the ping: a pong answers a ping only when it carries that ping's tag. A
// client that keeps sending, pongs included, but does not read answers
// nothing, and its oldest ping grows old.
type clientPings struct {
	mu   sync.Mutex
	sent []sentPing
}

// sentPing is a ping the gateway sent the client: when, and its payload's
// tag.
type sentPing struct {
	at  time.Time
	tag uint64
}

// maxPingsOut bounds the unanswered pings a session remembers.
const maxPingsOut = 16

// Send notes a ping sent at now and gives its payload, unless the oldest
// ping not yet answered is older than timeout: then it notes nothing and
// overdue is true.
func (p *clientPings) Send(now time.Time, timeout time.Duration) (payload []byte, overdue bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.sent) > 0 && now.Sub(p.sent[0].at) > timeout {
		return nil, true
	}
	if len(p.sent) == maxPingsOut {
		p.sent = append(p.sent[:0], p.sent[1:]...)
	}
	ping := sentPing{at: now, tag: rand.Uint64()}
	p.sent = append(p.sent, ping)
	return strconv.AppendUint(nil, ping.tag, 16), false
}

// Pong notes the client's pong, its payload data: one that carries the tag
// of an outstanding ping answers it and every older one (the client reads
// in order). An unsolicited pong, or one with a tag the client could not
// have read, answers nothing.
func (p *clientPings) Pong(data string) {
	tag, err := strconv.ParseUint(data, 16, 64)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, ping := range p.sent {
		if ping.tag == tag {
			p.sent = append(p.sent[:0], p.sent[i+1:]...)
			return
		}
	}
}

// Len is how many pings the client has not answered.
func (p *clientPings) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sent)
}
