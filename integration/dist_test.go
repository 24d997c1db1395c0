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

	"github.com/gatehouse/gatehouse/caddymodule/wshandler"
	"github.com/gatehouse/gatehouse/wsauth"
)

// TestServiceUnit: dist/gatehouse.service passes systemd-analyze verify
// without a warning (run against the binary the tests built, in place of
// /usr/bin/gatehouse), runs the binary's own run and reload commands, and
// gives a stop time that covers the message gateway's drain (the sockets'
// close frames spread over the default drain window, the last one's write
// of write_timeout at most, and close_grace to answer). It failed when: a misspelt key (TimeoutStopSecs) was only a
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
	if drain := wshandler.DefaultDrainWindow + wsauth.DefaultWriteTimeout + wsauth.DefaultCloseGrace; stop < drain+5*time.Second {
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

// TestXcaddyBuildShowsTheVersion: a binary built as users build it
// (xcaddy.sh: xcaddy with the module replaced by this checkout at a given
// version) registers every module of ours and not the demo backend, and
// shows that version where a user looks: `list-modules --versions` beside
// each module and `build-info` beside the dependency. It failed when the
// root package imported the demo backend again, and when xcaddy.sh
// replaced the module without a version (the build itself fails: `go get`
// asks the module proxy for a version this checkout is not).
func TestXcaddyBuildShowsTheVersion(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds Caddy with xcaddy: a minute or more")
	}
	const version = "v0.0.0-test"
	bin := filepath.Join(t.TempDir(), "gatehouse")
	build := exec.Command("bash", filepath.Join(repoRoot, "xcaddy.sh"), bin)
	build.Env = append(os.Environ(), "GATEHOUSE_VERSION="+version)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("xcaddy.sh: %v\n%s", err, out)
	}

	out, err := exec.Command(bin, "list-modules", "--versions", "--skip-standard").Output()
	if err != nil {
		t.Fatalf("list-modules: %v", err)
	}
	listed := map[string]string{}
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) == 2 {
			listed[f[0]] = f[1]
		}
	}
	ours := moduleIDs(t)
	if len(ours) < 10 {
		t.Fatalf("found %d module IDs in caddymodule's source: %v", len(ours), ours)
	}
	for _, id := range ours {
		switch v, ok := listed[id]; {
		case !ok:
			t.Errorf("list-modules does not show %s:\n%s", id, out)
		case v != version:
			t.Errorf("list-modules shows %s at %s, want %s", id, v, version)
		}
	}
	for id := range listed {
		if strings.Contains(id, "demo") {
			t.Errorf("the xcaddy build registers %s", id)
		}
	}

	out, err = exec.Command(bin, "build-info").Output()
	if err != nil {
		t.Fatalf("build-info: %v", err)
	}
	dep := regexp.MustCompile(`(?m)^dep\s+github\.com/gatehouse/gatehouse\s+` + regexp.QuoteMeta(version) + `\b`)
	if !dep.Match(out) {
		t.Errorf("build-info does not show github.com/gatehouse/gatehouse %s:\n%s", version, out)
	}
}

// moduleIDs are the Caddy module IDs caddymodule's packages register,
// read from their source (the demo backend's left out).
func moduleIDs(t *testing.T) []string {
	t.Helper()
	idLine := regexp.MustCompile(`(?m)^\s*ID:\s+"([^"]+)",`)
	var ids []string
	err := filepath.WalkDir(filepath.Join(repoRoot, "caddymodule"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "demobackend" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range idLine.FindAllSubmatch(src, -1) {
			ids = append(ids, string(m[1]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
