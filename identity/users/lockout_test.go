package users

import (
	"testing"
	"time"
)

func TestThrottleDelay(t *testing.T) {
	p := LockoutPolicy{}.WithDefaults()
	tests := []struct {
		failures int
		want     time.Duration
	}{
		// failures before the attempt: the 4th attempt, after 3, is the
		// first delayed
		{0, 0}, {2, 0}, {3, 250 * time.Millisecond}, {4, 500 * time.Millisecond},
		{5, time.Second}, {6, 2 * time.Second}, {7, 3 * time.Second}, {1000, 3 * time.Second},
	}
	for _, tt := range tests {
		if got := p.throttleDelay(tt.failures); got != tt.want {
			t.Errorf("throttleDelay(%d) = %v, want %v", tt.failures, got, tt.want)
		}
	}
}

func TestSourceKey(t *testing.T) {
	tests := map[string]string{
		"192.0.2.7":            "192.0.2.7",
		"::ffff:192.0.2.7":     "192.0.2.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":      "2001:db8:1:3::/64",
		"not-an-ip":            "not-an-ip",
	}
	for in, want := range tests {
		if got := SourceKey(in); got != want {
			t.Errorf("SourceKey(%q) = %q, want %q", in, got, want)
		}
	}
}
