package wsauth

import (
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// BenchmarkRelay: backend -> client messages per second through the
// Gateway (authenticated, policy on, no compression), next to a direct
// gorilla connection to the same fake backend (the baseline), in the same
// run, batches alternating. Reported: gateway_msg/s, direct_msg/s and
// their ratio, gateway/direct (1 would be free).
func BenchmarkRelay(b *testing.B) {
	const batch = 2000
	e := newTestEnv(b, func(c *Config) {
		c.Hooks.Logger, c.Transport.SendQueue = zap.NewNop(), 1024
		c.Limits.Default = policy.Limits{MessagesPerSecond: 1e9, Burst: 1 << 30} // one Blast per batch, not a client's rate
	})
	gw := e.dial(bearer(tokDemo))
	direct, _, err := (&websocket.Dialer{Subprotocols: []string{DefaultSubprotocol}}).Dial(e.backend.url(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	blast := []byte(`{"Controller":"Market","Topic":"Blast","Data":2000}`)
	run := func(c *websocket.Conn) time.Duration {
		start := time.Now()
		if err := c.WriteMessage(websocket.TextMessage, blast); err != nil {
			b.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		for range batch {
			if _, _, err := c.ReadMessage(); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	run(gw) // warm up
	run(direct)
	var tg, td time.Duration
	n := 0
	for b.Loop() {
		tg += run(gw)
		td += run(direct)
		n += batch
	}
	g, d := float64(n)/tg.Seconds(), float64(n)/td.Seconds()
	b.ReportMetric(g, "gateway_msg/s")
	b.ReportMetric(d, "direct_msg/s")
	b.ReportMetric(g/d, "gateway/direct")
}
