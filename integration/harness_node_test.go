package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The Node tests run openid-client scripts from node/ against a gatehouse.

// nodeSetup serializes the check for node_modules and `npm ci`: the Node
// tests run in parallel and share node/.
var nodeSetup sync.Mutex

// runNodeScript runs `node --test integration/node/<script>` against g,
// then adds every token the script was issued to the secrets g's log
// must not hold. It returns the script's combined output.
func runNodeScript(t *testing.T, g *Gatehouse, script string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed for this test (the project's test command installs it): %v", err)
	}
	nodeDir := filepath.Join(repoRoot, "integration", "node")
	installNodeModules(t, nodeDir)

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

	// The tokens the script was issued must not be in the log either, even
	// when the script failed.
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

// nodeDependencies are the packages of node/package.json the scripts
// need: a node_modules installed before one of them was added lacks it.
var nodeDependencies = []string{"openid-client", "ws", "oidc-client-ts", "jose"}

// installNodeModules runs npmCI in dir unless node_modules holds every
// dependency.
func installNodeModules(t *testing.T, dir string) {
	t.Helper()
	nodeSetup.Lock()
	defer nodeSetup.Unlock() // also when npmCI fails the test
	for _, dep := range nodeDependencies {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", dep)); err != nil {
			npmCI(t, dir)
			return
		}
	}
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
