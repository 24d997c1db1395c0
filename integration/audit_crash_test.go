package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The audit chain across a crash, through the real binary: a burst of
// sessions, token requests and queries, kill -9 in the middle of it, then
// `gatehouse audit verify` on what the process left (docs/audit.md, "What
// verify reports"). A crash leaves a chain that verifies: the records after
// the run's last checkpoint are listed as unprotected, a last line cut
// short as a cut, neither as a problem; the next run names the crashed
// run's last checkpoint the store kept. The test reads the file itself
// (plain JSON, not the audit package) to know what verify must say: a
// line is one record, or, where concurrent appends shared a write, a batch
// line whose member records holds several (verify names each by line and
// index, file:12[3]).

// Bounds of the crash test; each is a limit, not a delay.
const (
	// crashCheckpointInterval is short, so that the crashed run has
	// checkpoints (and a tail after the last one) within seconds; long
	// enough that one rarely lands between the last poll and the kill.
	crashCheckpointInterval = "2s"
	crashWorkers            = 4                // goroutines churning sessions, tokens and queries
	crashHolders            = 2                // sessions held open until the kill
	crashMinTail            = 20               // records after the last checkpoint before the kill
	crashMinStarts          = 10               // subscription_start records before the kill
	crashBurstTimeout       = 90 * time.Second // until the kill's conditions are in the file
	crashPoll               = 50 * time.Millisecond
)

// anchorCheckpointInterval is the demo's checkpoint interval line.
const anchorCheckpointInterval = "\t\t\tcheckpoint_interval 1m\n"

// auditVerify runs `gatehouse audit verify --config <g's config>` with g's
// environment and returns its output and exit status.
func auditVerify(t testing.TB, g *Gatehouse) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "audit", "verify", "--config", g.opts.Config)
	cmd.Dir = repoRoot
	cmd.Env = g.Env()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("gatehouse audit verify: %v\n%s", err, out)
	}
	return string(out), 0
}

// verifyOK runs verify and requires it to pass: exit 0, no problem.
func verifyOK(t testing.TB, g *Gatehouse, what string) string {
	t.Helper()
	out, code := auditVerify(t, g)
	t.Logf("%s: gatehouse audit verify (exit %d):\n%s", what, code, strings.TrimSpace(out))
	if code != 0 || strings.Contains(out, "PROBLEM") || !strings.Contains(out, "OK: every chain and checkpoint verifies") {
		t.Fatalf("%s: gatehouse audit verify exited %d, want 0 with no problem:\n%s", what, code, out)
	}
	return out
}

var storeComparedRE = regexp.MustCompile(`(\d+) checkpoints of the store compared`)

// storeCompared is how many checkpoints of the store verify compared.
func storeCompared(t testing.TB, out string) int {
	t.Helper()
	m := storeComparedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("verify's output has no count of the store's checkpoints:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestAuditCrash kills the demo with SIGKILL in the middle of a burst of
// sessions, token requests and queries, and requires `gatehouse audit
// verify` to pass on what it left: the tail after the last checkpoint
// listed as unprotected, then, with the last line cut short as a crash in
// the middle of a write leaves it, that line as a cut; the next run to
// name the crashed run's last checkpoint the store kept and to run on
// from the cut line; both runs to verify after a clean stop. Then it edits
// the crashed run's file (a record changed, one removed, a middle line
// cut short) and requires verify to exit 1 naming each: the checks above
// are not vacuous.
func TestAuditCrash(t *testing.T) {
	t.Parallel()
	config := demoVariant(t, "audit-crash", configEdit{anchor: anchorCheckpointInterval,
		insert: "\t\t\tcheckpoint_interval " + crashCheckpointInterval + "\n", replace: true})
	g := StartGatehouseWith(t, Options{Config: config})
	file := g.AuditLog()
	c := crashClient{g: g, endpoint: g.TokenEndpoint(t)}

	// The burst, and kill -9 in its middle.
	b := startCrashBurst(t, c)
	waitForKillPoint(t, g)
	b.killed.Store(true)
	g.Kill()
	b.wait()
	t.Logf("burst: %d units done, %d cut by the kill", b.done, b.cut)
	for _, err := range b.faults {
		t.Errorf("the burst failed before the kill: %v", err)
	}
	if b.cut < crashHolders {
		t.Errorf("the kill cut %d units short, want at least the %d held sessions", b.cut, crashHolders)
	}

	crashed := readChain(t, file, 0)
	run1 := crashed.lines[0].Run
	s1 := summarize(crashed.run(run1))
	if len(s1.lines) != len(crashed.lines) {
		t.Fatalf("the audit file holds %d lines of other runs than %q", len(crashed.lines)-len(s1.lines), run1)
	}
	for _, kind := range []string{"run_start", "authentication", "subscription_start", "subscription_end", "query", "checkpoint"} {
		if s1.kinds[kind] == 0 {
			t.Errorf("the crashed run has no %s record (kinds %v): the burst did not reach the audit", kind, s1.kinds)
		}
	}
	// The held sessions' subscriptions have no end: the kill came while
	// they were live.
	if open := s1.kinds["subscription_start"] - s1.kinds["subscription_end"]; open < 2*crashHolders {
		t.Errorf("%d subscriptions open at the kill, want at least the held sessions' %d", open, 2*crashHolders)
	}
	for _, cp := range s1.checkpoints {
		if payloadFinal(t, cp.JWS) {
			t.Errorf("checkpoint seq %d of the crashed run says final: only Close writes one", cp.Seq)
		}
	}

	// What the kill left verifies: the tail after the last checkpoint is
	// unprotected. The store holds the run's checkpoints, but for one the
	// kill may have caught between the log and the store.
	out := verifyOK(t, g, "after the kill")
	tail := s1.tail()
	if len(tail) > 0 && !strings.Contains(out, unprotectedLine(file, tail[0], s1.last().Seq)) {
		t.Errorf("verify does not list seq %d to %d as unprotected:\n%s", tail[0].Seq, s1.last().Seq, out)
	}
	if len(tail) == 0 {
		t.Logf("a checkpoint was the last record the kill left: no tail")
	}
	stored := storeCompared(t, out)
	if stored != len(s1.checkpoints) && stored != len(s1.checkpoints)-1 {
		t.Fatalf("the store holds %d checkpoints, the file %d of the crashed run", stored, len(s1.checkpoints))
	}
	// What the next run must name: the store's last checkpoint of the
	// run, none when the kill took the only one before the store had it.
	var prevRun any
	var prevSeq uint64
	if stored > 0 {
		prevRun, prevSeq = run1, s1.checkpoints[stored-1].Seq
	}

	// A crash in the middle of a write leaves the last line cut short. A
	// kill -9 seldom does (the writer writes a line with one write), so
	// unless it did, the test cuts the kill's last record in the middle of
	// its line: it is unprotected, nothing vouches for it.
	cutAt, cut := len(crashed.raw), crashed.cut
	switch last := s1.last(); {
	case cut:
		t.Logf("the kill cut the last line short")
		if want := fmt.Sprintf("cut %s:%d: a line a crash cut short", file, last.line+1); !strings.Contains(out, want) {
			t.Errorf("verify does not report the cut line %d:\n%s", last.line+1, out)
		}
	case last.Kind == "checkpoint":
		t.Logf("the kill's last record is a checkpoint: no line to cut")
	default:
		lastStart := bytes.LastIndexByte(crashed.raw[:len(crashed.raw)-1], '\n') + 1
		cutAt, cut = lastStart+(len(crashed.raw)-lastStart)/2, true
		if err := os.Truncate(file, int64(cutAt)); err != nil {
			t.Fatal(err)
		}
		// A batch line cut short loses all its records.
		tail = slices.DeleteFunc(tail, func(l chainLine) bool { return l.line == last.line })
		out = verifyOK(t, g, "with the last line cut")
		if want := fmt.Sprintf("cut %s:%d: a line a crash cut short", file, last.line); !strings.Contains(out, want) {
			t.Errorf("verify does not report the cut line %d:\n%s", last.line, out)
		}
		if len(tail) > 0 && !strings.Contains(out, unprotectedLine(file, tail[0], tail[len(tail)-1].Seq)) {
			t.Errorf("verify does not list seq %d to %d as unprotected:\n%s", tail[0].Seq, tail[len(tail)-1].Seq, out)
		}
	}

	// The next run, on the same data directory: a little traffic, a clean
	// stop.
	g.Start()
	tok, err := c.token(t.Context(), "demo")
	if err == nil {
		err = c.session(t.Context(), tok, []string{"Security!BHP.ASX"}, nil)
	}
	if err == nil {
		err = c.query(t.Context(), tok)
	}
	if err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	g.Stop()

	after := readChain(t, file, cutAt)
	if after.cut {
		t.Fatal("the second run's last line has no line break after a clean stop")
	}
	run2 := after.lines[0].Run
	s2 := summarize(after.run(run2))
	start := s2.lines[0]
	if start.Kind != "run_start" || start.Attrs["prev_run"] != prevRun || (prevRun != nil && start.Attrs["prev_seq"] != float64(prevSeq)) {
		t.Errorf("the second run's first record is %s %v, want a run_start naming run %v seq %d", start.Kind, start.Attrs, prevRun, prevSeq)
	}
	if last := s2.last(); last.Kind != "checkpoint" || !payloadFinal(t, last.JWS) {
		t.Errorf("the second run ends with %s seq %d, want its final checkpoint", last.Kind, last.Seq)
	}
	if s2.kinds["subscription_start"] == 0 || s2.kinds["query"] == 0 {
		t.Errorf("the second run's records miss the traffic: kinds %v", s2.kinds)
	}
	out = verifyOK(t, g, "after the second run")
	if !strings.Contains(out, "of 2 runs") {
		t.Errorf("verify after the second run does not count 2 runs:\n%s", out)
	}
	if len(tail) > 0 && !strings.Contains(out, unprotectedLine(file, tail[0], tail[len(tail)-1].Seq)) {
		t.Errorf("verify after the second run does not list the crashed run's seq %d to %d as unprotected:\n%s",
			tail[0].Seq, tail[len(tail)-1].Seq, out)
	}
	if cut && !strings.Contains(out, fmt.Sprintf("cut %s:%d:", file, start.line)) {
		t.Errorf("verify after the second run does not report the cut line %d, where the second run begins:\n%s", start.line, out)
	}
	if strings.Contains(out, fmt.Sprintf("run %q seq", run2)) {
		t.Errorf("verify lists records of the cleanly stopped run:\n%s", out)
	}

	// The same files, edited: each edit of the crashed run is a problem
	// that verify names, exit 1.
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	victim, ok := protectedRecord(s1)
	if !ok {
		t.Fatalf("the crashed run has no authentication record before its last checkpoint (seq %d)", s1.lastCheckpoint())
	}
	t.Logf("the victim is seq %d at %s; the crashed run wrote %d batch lines", victim.Seq, victim.pos(file), crashed.batches)
	lines := bytes.SplitAfter(good, []byte("\n"))
	at := victim.line - 1
	edit := func(replace []byte) []byte {
		return bytes.Join(append(append(append([][]byte{}, lines[:at]...), replace), lines[at+1:]...), nil)
	}
	// Where verify names the removal: at the record after the victim,
	// which takes the victim's place in its batch line, stays where it is
	// on the next line, or, when the victim's line goes whole, moves up
	// into its line.
	next := s1.lines[slices.IndexFunc(s1.lines, func(l chainLine) bool { return l.Seq == victim.Seq })+1]
	switch {
	case victim.index > 0 && next.line == victim.line:
		next.index = victim.index
	case victim.index == 0:
		next.line = victim.line
	}
	afterRemoval := next.pos(file)
	for _, tt := range []struct {
		name   string
		edited []byte
		want   string
	}{
		{"a record changed", edit(editRecord(t, lines[at], victim.index, func(r []byte) []byte {
			return bytes.Replace(r, []byte(`"outcome":"ok"`), []byte(`"outcome":"no"`), 1)
		})), fmt.Sprintf("PROBLEM %s: edited: instance %q run %q seq %d: its content is not", victim.pos(file), victim.Instance, run1, victim.Seq)},
		{"a record removed", edit(editRecord(t, lines[at], victim.index, func([]byte) []byte { return nil })),
			fmt.Sprintf("PROBLEM %s: removed: instance %q run %q seq %d:", afterRemoval, victim.Instance, run1, victim.Seq)},
		{"a middle line cut short", edit(append(lines[at][:len(lines[at])/2:len(lines[at])/2], '\n')),
			fmt.Sprintf("PROBLEM %s:%d: edited: instance \"\" run \"\" seq 0:", file, victim.line)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if bytes.Equal(tt.edited, good) {
				t.Fatalf("the edit changed nothing in line %d", victim.line)
			}
			if err := os.WriteFile(file, tt.edited, 0o600); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := os.WriteFile(file, good, 0o600); err != nil {
					t.Fatal(err)
				}
			})
			out, code := auditVerify(t, g)
			t.Logf("gatehouse audit verify (exit %d):\n%s", code, strings.TrimSpace(out))
			if code != 1 || !strings.Contains(out, tt.want) {
				t.Errorf("verify exited %d, want 1 with %q:\n%s", code, tt.want, out)
			}
		})
	}
	verifyOK(t, g, "the files restored")
}
