package wsauth

import (
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// BenchmarkSubscribeWithVenues: the cost of a subscription through a
// gateway that checks entitlements, next to one that does not (the
// baseline), in the same run, batches alternating: each batch is 100 Subs
// pipelined, their snapshots read, then their Unsubs. Reported: µs per
// Sub and Unsub on each, and the difference, what the check adds to a
// subscription (its goal: at most 5 µs).
func BenchmarkSubscribeWithVenues(b *testing.B) {
	const batch = 100
	quiet := func(c *Config) {
		c.Hooks.Logger = zap.NewNop()
		c.Limits.Default = policy.Limits{MessagesPerSecond: 1e9, Burst: 1 << 30, Subscriptions: 2 * batch}
	}
	checked := venueEnv(b, quiet)
	plain, _ := newLiveEnv(b, quiet)
	tok := entToken("ASX:quotes ASX:depth NZX:quotes")
	cc, cp := checked.dial(bearer(tok)), plain.dial(bearer(tok))
	var subs, unsubs []string
	for i := range batch {
		topic := "Security!S" + strconv.Itoa(i) + ".ASX"
		subs = append(subs, subMsg("Market", topic, i))
		unsubs = append(unsubs, unsubMsg("Market", topic, i))
	}
	run := func(c *websocket.Conn) time.Duration {
		start := time.Now()
		writePipelined(b, c, subs...)
		readN(b, c, batch)
		writePipelined(b, c, unsubs...)
		readN(b, c, batch) // the fake backend confirms each Unsub
		return time.Since(start)
	}
	run(cc) // warm up
	run(cp)
	var tc, tp time.Duration
	n := 0
	for b.Loop() {
		tc += run(cc)
		tp += run(cp)
		n += batch
	}
	perC, perP := tc.Seconds()*1e6/float64(n), tp.Seconds()*1e6/float64(n)
	b.ReportMetric(perC, "checked_µs/sub")
	b.ReportMetric(perP, "plain_µs/sub")
	b.ReportMetric(perC-perP, "added_µs/sub")
}
