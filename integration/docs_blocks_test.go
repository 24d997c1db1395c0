package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jwtShape is a JWT's shape, to keep tokens out of the test's messages.
var jwtShape = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// refreshShape is a refresh token in a token response.
var refreshShape = regexp.MustCompile(`"refresh_token":"[^"]+"`)

// shellBlocks are the ```sh blocks of a Markdown page, in order, but those
// marked no-run (they need a browser or a person).
func shellBlocks(t *testing.T, page string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, page))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```sh([^\n]*)\n(.*?)^```").FindAllStringSubmatch(string(b), -1) {
		if strings.Contains(m[1], "no-run") {
			continue
		}
		blocks = append(blocks, m[2])
	}
	return blocks
}

// TestDocumentedCommandsRun: the shell blocks of the README's tour and of
// docs/getting-started.md run, in order, against the demo binary (its
// address put where the pages say localhost:8080), and show what the pages
// say they show: tokens, a query's rows, an order inserted, a quote ticking.
func TestDocumentedCommandsRun(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	for _, page := range []string{"README.md", "docs/getting-started.md"} {
		t.Run(page, func(t *testing.T) {
			blocks := shellBlocks(t, page)
			if len(blocks) < 2 {
				t.Fatalf("%s: %d runnable shell blocks", page, len(blocks))
			}
			script := "set -euo pipefail\n" + strings.ReplaceAll(strings.Join(blocks, "\n"), "localhost:8080", "localhost:"+strconv.Itoa(g.Port))
			cmd := exec.Command("bash", "-c", script)
			cmd.Dir = repoRoot
			cmd.Env = append(os.Environ(), "GATEHOUSE_HTTP_PORT="+strconv.Itoa(g.Port))
			cmd.WaitDelay = time.Second
			done := make(chan struct{})
			defer close(done)
			go func() {
				select {
				case <-done:
				case <-time.After(3 * time.Minute):
					_ = cmd.Process.Kill()
				}
			}()
			out, err := cmd.CombinedOutput()
			out = jwtShape.ReplaceAll(out, []byte("<a token>")) // the failure message shows no token
			out = refreshShape.ReplaceAll(out, []byte(`"refresh_token":"<a token>"`))
			if err != nil {
				t.Fatalf("%s: %v\n%s", page, err, out)
			}
			for _, want := range []string{
				`"Rows":[["BHP",`,                // the query's rows
				"subscribed to Security!BHP.ASX", // examples/quote
				"BHP  last ",                     // and its ticks
			} {
				if !strings.Contains(string(out), want) {
					t.Errorf("%s: the output lacks %q:\n%s", page, want, out)
				}
			}
		})
	}
}
