package consolehandler

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestCaddyfileMistakes: each mistake is refused with its place.
func TestCaddyfileMistakes(t *testing.T) {
	for name, tc := range map[string]struct{ input, want string }{
		"an argument":         {"gatehouse_console x", "wrong argument count"},
		"client_id twice":     {"gatehouse_console {\n client_id a\n client_id b\n}", "client_id given twice"},
		"a link without href": {"gatehouse_console {\n link Title\n}", "wrong argument count"},
		"unknown":             {"gatehouse_console {\n colour blue\n}", `unrecognized subdirective "colour"`},
		"issuer without arg":  {"gatehouse_console {\n issuer\n}", "wrong argument count"},
	} {
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	var h Handler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("gatehouse_console {\n client_id c\n link \"A b\" /x\n link C https://c.example.com/\n}")); err != nil {
		t.Fatal(err)
	}
	if h.ClientID != "c" || len(h.Links) != 2 || h.Links[0] != (Link{"A b", "/x"}) {
		t.Errorf("parsed %+v", h)
	}
}
