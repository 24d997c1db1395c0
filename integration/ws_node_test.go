package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	out := runNodeWSScript(t, g, "ws.test.mjs")
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

// runNodeWSScript is runNodeScript for a script that needs the ws package
// (which a node_modules installed before it was a dependency lacks) and
// whose output the test reads: it returns the combined output.
func runNodeWSScript(t *testing.T, g *Gatehouse, script string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed for this test (the project's test command installs it): %v", err)
	}
	nodeDir := filepath.Join(repoRoot, "integration", "node")
	func() {
		nodeSetup.Lock()
		defer nodeSetup.Unlock()
		for _, dep := range []string{"openid-client", "ws"} {
			if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", dep)); err != nil {
				npmCI(t, nodeDir)
				return
			}
		}
	}()

	tokensFile := filepath.Join(t.TempDir(), "tokens")
	path := "integration/node/" + script
	ctx, cancel := context.WithTimeout(t.Context(), nodeRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", path)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(),
		"GATEHOUSE_ISSUER="+g.Issuer,
		"GATEHOUSE_TOKENS_FILE="+tokensFile,
	)
	out, runErr := cmd.CombinedOutput()
	b, err := os.ReadFile(tokensFile)
	tokens := strings.Fields(string(b))
	g.AddSecret(tokens...)
	if runErr != nil {
		t.Fatalf("node --test %s: %v\n%s\ngatehouse log:\n%s", path, runErr, out, g.Logs())
	}
	t.Logf("node --test %s:\n%s", path, summary(out))
	if err != nil || len(tokens) == 0 {
		t.Fatalf("the script recorded no tokens (%v)", err)
	}
	return string(out)
}
