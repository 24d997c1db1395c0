package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	npmCITimeout   = 5 * time.Minute
	nodeRunTimeout = 2 * time.Minute
)

// TestNodeOpenIDClient runs node/oidc.test.mjs, which drives the server with
// openid-client v6: discovery, password grant, refresh, client credentials
// (client_secret_post and client_secret_basic).
func TestNodeOpenIDClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed for this test (the project's test command installs it): %v", err)
	}
	nodeDir := filepath.Join(repoRoot, "integration", "node")
	if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "openid-client")); err != nil {
		npmCI(t, nodeDir)
	}

	g := StartGatehouse(t)
	tokensFile := filepath.Join(t.TempDir(), "tokens")

	ctx, cancel := context.WithTimeout(t.Context(), nodeRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "integration/node/oidc.test.mjs")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(),
		"GATEHOUSE_ISSUER="+g.Issuer,
		"GATEHOUSE_TOKENS_FILE="+tokensFile,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test integration/node/oidc.test.mjs: %v\n%s\ngatehouse log:\n%s", err, out, g.Logs())
	}
	t.Logf("node --test:\n%s", summary(out))

	// The tokens the script was issued must not be in the log either.
	b, err := os.ReadFile(tokensFile)
	if err != nil {
		t.Fatalf("the script recorded no tokens: %v", err)
	}
	tokens := strings.Fields(string(b))
	if len(tokens) == 0 {
		t.Fatal("the script recorded no tokens")
	}
	g.AddSecret(tokens...)
}

// npmCI installs the script's locked dependencies.
func npmCI(t *testing.T, dir string) {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("node_modules is missing in %s and npm is not installed: %v", dir, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), npmCITimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}

// summary keeps the result lines of node's TAP output.
func summary(out []byte) string {
	var keep []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "not ok ") || strings.HasPrefix(line, "# ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}
