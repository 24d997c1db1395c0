package integration

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/wsauth"
)

// TestServiceUnit: dist/gatehouse.service passes systemd-analyze verify
// without a warning (run against the binary the tests built, in place of
// /usr/bin/gatehouse), runs the binary's own run and reload commands, and
// gives a stop time that covers the message gateway's drain (every socket
// gets its close frame, a write of write_timeout at most, and close_grace
// to answer). It failed when: a misspelt key (TimeoutStopSecs) was only a
// warning, which verify's exit status does not show.
func TestServiceUnit(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is missing: test.sh installs Debian's systemd for this test")
	}
	unit, err := os.ReadFile(filepath.Join(repoRoot, "dist", "gatehouse.service"))
	if err != nil {
		t.Fatal(err)
	}
	var stop time.Duration
	var execs []string
	for line := range strings.Lines(string(unit)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		switch k {
		case "TimeoutStopSec":
			if stop, err = time.ParseDuration(v); err != nil {
				t.Fatalf("TimeoutStopSec=%s: %v", v, err)
			}
		case "ExecStart", "ExecReload":
			execs = append(execs, v)
		}
	}
	if drain := wsauth.DefaultWriteTimeout + wsauth.DefaultCloseGrace; stop < drain+5*time.Second {
		t.Errorf("TimeoutStopSec %v does not cover the gateway's drain (%v) with room", stop, drain)
	}
	if len(execs) != 2 || !strings.HasPrefix(execs[0], "/usr/bin/gatehouse run ") || !strings.HasPrefix(execs[1], "/usr/bin/gatehouse reload ") {
		t.Errorf("ExecStart and ExecReload: %q", execs)
	}
	local := filepath.Join(t.TempDir(), "gatehouse.service")
	if err := os.WriteFile(local, []byte(strings.ReplaceAll(string(unit), "/usr/bin/gatehouse", binary)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", local).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "gatehouse.service") {
			t.Errorf("systemd-analyze verify: %s", sc.Text())
		}
	}
}

// TestVersionIsStamped: `gatehouse version` of a plain `go build` of the
// checkout shows the version Go stamps from version control (the commit's
// tag, or a pseudo-version naming the commit, +dirty for uncommitted
// changes) before Caddy's, where a user looks for it. It failed when: it
// printed Caddy's version alone.
func TestVersionIsStamped(t *testing.T) {
	t.Parallel()
	rev, err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skip("not a git checkout: Go stamps no version")
	}
	want := regexp.MustCompile(`^gatehouse v0\.0\.0-\d{14}-` + string(rev[:12]) + `(\+dirty)?, Caddy v2\.`)
	if tag, err := exec.Command("git", "-C", repoRoot, "describe", "--tags", "--exact-match").Output(); err == nil {
		want = regexp.MustCompile(`^gatehouse ` + regexp.QuoteMeta(strings.TrimSpace(string(tag))) + `(\+dirty)?, Caddy v2\.`)
	}
	bin := filepath.Join(t.TempDir(), "gatehouse")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/gatehouse")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !want.Match(out) {
		t.Fatalf("gatehouse version: %q, want %s", out, want)
	}
}
