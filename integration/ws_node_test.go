package integration

import (
	"strings"
	"testing"
)

// TestNodeWSClient runs node/ws.test.mjs, which takes a demo token with the
// password grant, opens /ws with npm's ws (the token in the Authorization
// header, the ServiceJson sub-protocol), sends Zenith/ServerInfo and prints
// the reply: the demo backend's answer, relayed by the gateway.
func TestNodeWSClient(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	out := runNodeScript(t, g, "ws.test.mjs")
	var reply string
	for line := range strings.Lines(out) {
		if _, after, ok := strings.Cut(line, "ServerInfo reply: "); ok {
			reply = strings.TrimSpace(after)
		}
	}
	if reply == "" {
		t.Fatalf("the script printed no ServerInfo reply:\n%s", out)
	}
	for _, want := range []string{`"Controller":"Zenith"`, `"Topic":"ServerInfo"`, `"TransactionID":1`} {
		if !strings.Contains(reply, want) {
			t.Errorf("ServerInfo reply %s lacks %s", reply, want)
		}
	}
	if strings.Contains(reply, `"Action":"Error"`) {
		t.Errorf("ServerInfo reply is an error: %s", reply)
	}
}
