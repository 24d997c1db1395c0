package wshandler

import (
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestSendQueueSubdirectives: send_queue_bytes and send_queue reach the
// gateway's configuration; zero, negative and missing values are refused.
func TestSendQueueSubdirectives(t *testing.T) {
	var h Handler
	d := caddyfile.NewTestDispenser("gatehouse_ws {\n\tupstream ws://127.0.0.1:9090/\n\tsend_queue_bytes 1048576\n\tsend_queue 64\n}")
	if err := h.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	cfg, err := h.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SendQueueBytes != 1<<20 || cfg.SendQueue != 64 {
		t.Fatalf("send queue %d bytes, %d messages; want 1048576 and 64", cfg.SendQueueBytes, cfg.SendQueue)
	}
	for _, bad := range []string{"send_queue_bytes 0", "send_queue_bytes -1", "send_queue_bytes", "send_queue 0", "send_queue many"} {
		var h Handler
		d := caddyfile.NewTestDispenser("gatehouse_ws {\n\tupstream ws://127.0.0.1:9090/\n\t" + bad + "\n}")
		if err := h.UnmarshalCaddyfile(d); err == nil {
			t.Errorf("%q: %v, want an error", bad, err)
		}
	}
}
