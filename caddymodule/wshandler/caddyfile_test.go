package wshandler

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/gatehouse/gatehouse/wsauth/policy"
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
	if cfg.Transport.SendQueueBytes != 1<<20 || cfg.Transport.SendQueue != 64 {
		t.Fatalf("send queue %d bytes, %d messages; want 1048576 and 64", cfg.Transport.SendQueueBytes, cfg.Transport.SendQueue)
	}
	for _, bad := range []string{"send_queue_bytes 0", "send_queue_bytes -1", "send_queue_bytes", "send_queue 0", "send_queue many"} {
		var h Handler
		d := caddyfile.NewTestDispenser("gatehouse_ws {\n\tupstream ws://127.0.0.1:9090/\n\t" + bad + "\n}")
		if err := h.UnmarshalCaddyfile(d); err == nil {
			t.Errorf("%q: %v, want an error", bad, err)
		}
	}
}

// TestValidateNamesAreJSONKeys: every knob a wsauth.Config.Validate error
// can name (Config.Validate and the Validate of each of its groups) is a
// JSON key of this module, so a JSON user reads the name they wrote, or
// one of the core's own knobs this module never sets (their defaults
// always pass). It failed when: the core said max_message_bytes for the
// field JSON called max_message_size.
func TestValidateNamesAreJSONKeys(t *testing.T) {
	coreOnly := map[string]bool{"close_grace": true, "dial_timeout": true, "max_backend_message_bytes": true,
		"max_subscription_bytes": true, "max_token_bytes": true, "supervise_interval": true, "write_timeout": true}
	files, err := filepath.Glob(filepath.Join("..", "..", "wsauth", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	// The validating methods of Config and of its groups, to their end.
	method := regexp.MustCompile(`(?m)^func \(\w+ \*(?:Config|Backend|Transport|Auth|Live|Limits|Hooks)\) [Vv]alidate\w*\(\) error \{\n(?:.*\n)*?\}\n`)
	names := map[string]bool{}
	found := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, body := range method.FindAllString(string(src), -1) {
			found++
			for _, lit := range regexp.MustCompile(`"[^"\n]*"`).FindAllString(body, -1) {
				for _, n := range regexp.MustCompile(`\b[a-z]+(?:_[a-z]+)+\b`).FindAllString(lit, -1) {
					names[n] = true
				}
			}
		}
	}
	if found < 8 {
		t.Fatalf("only %d validating methods found: the scan is broken", found)
	}
	keys := map[string]bool{}
	for _, typ := range []reflect.Type{reflect.TypeFor[Handler](), reflect.TypeFor[policy.Limits](), reflect.TypeFor[policy.LimitOverride]()} {
		for f := range typ.Fields() {
			if k, _, _ := strings.Cut(f.Tag.Get("json"), ","); k != "" {
				keys[k] = true
			}
		}
	}
	if len(names) < 10 {
		t.Fatalf("only %d names found in Validate: the scan is broken", len(names))
	}
	for n := range names {
		if !keys[n] && !coreOnly[n] {
			t.Errorf("wsauth.Config.Validate names %q, which is not a JSON key of gatehouse_ws", n)
		}
	}
	// The core-only knobs stay at their defaults: config sets none of them.
	cfg, err := (&Handler{Upstreams: []string{"ws://127.0.0.1:1/"}}).config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Transport.CloseGrace != 0 || cfg.Backend.DialTimeout != 0 || cfg.Backend.MaxMessageBytes != 0 || cfg.Auth.MaxTokenBytes != 0 ||
		cfg.Live.SuperviseInterval != 0 || cfg.Transport.WriteTimeout != 0 || cfg.Limits.MaxSubscriptionBytes != 0 {
		t.Errorf("the module sets a core-only knob: %+v", cfg)
	}
}

// TestMaxMessageSizeIsAnAlias: the deprecated max_message_size still sets
// the bound, in the Caddyfile and in JSON; max_message_bytes wins when both
// are set.
func TestMaxMessageSizeIsAnAlias(t *testing.T) {
	var h Handler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("gatehouse_ws {\n\tupstream ws://127.0.0.1:9090/\n\tmax_message_size 2048\n}")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		h    Handler
		want int64
	}{{h, 2048}, {Handler{MaxMessageSize: 4096}, 4096}, {Handler{MaxMessageSize: 4096, MaxMessageBytes: 8192}, 8192}} {
		tc.h.Upstreams = []string{"ws://127.0.0.1:9090/"}
		cfg, err := tc.h.config()
		if err != nil || cfg.Transport.MaxMessageBytes != tc.want {
			t.Errorf("%+v: max message bytes %d, %v; want %d", tc.h, cfg.Transport.MaxMessageBytes, err, tc.want)
		}
	}
}
