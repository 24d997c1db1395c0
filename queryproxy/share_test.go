package queryproxy

import (
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
)

type pooledForwarder struct {
	engine.Forwarder
	n int
}

func (p pooledForwarder) MaxConns() int { return p.n }

// TestPerUserBound: a user runs at most MaxConcurrentPerUser queries, and no more than
// MaxUserShare percent of a pooled engine's connections, one at least.
func TestPerUserBound(t *testing.T) {
	for _, tt := range []struct{ perUser, share, conns, want int }{
		{4, 50, 4, 2}, {4, 50, 8, 4}, {4, 50, 32, 4}, {4, 50, 1, 1}, {4, 100, 4, 4}, {4, 25, 4, 1},
		{10, 50, 0, 10}, // not pooled: no share
	} {
		cfg := Config{MaxConcurrentPerUser: tt.perUser, MaxUserShare: tt.share, Forwarder: pooledForwarder{n: tt.conns}}
		if got := perUserBound(cfg); got != tt.want {
			t.Errorf("%d per user, %d%% of %d connections: %d, want %d", tt.perUser, tt.share, tt.conns, got, tt.want)
		}
	}
}
