package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
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

// chainLine is one record of the audit file as the test reads it.
type chainLine struct {
	Instance string         `json:"instance"`
	Run      string         `json:"run"`
	Seq      uint64         `json:"seq"`
	Kind     string         `json:"kind"`
	Attrs    map[string]any `json:"attrs"`
	JWS      string         `json:"jws"`
	line     int            // from 1, in the file
	index    int            // from 1 in a batch line, 0 for a record line
}

// batchLine is a line of several records.
type batchLine struct {
	Records []chainLine `json:"records"`
}

// pos is where verify names the record: file:line, file:line[index].
func (l chainLine) pos(file string) string {
	if l.index > 0 {
		return fmt.Sprintf("%s:%d[%d]", file, l.line, l.index)
	}
	return fmt.Sprintf("%s:%d", file, l.line)
}

// chainFile is what the test reads of an audit file: its complete lines,
// and whether the last one lacks its line break.
type chainFile struct {
	lines   []chainLine // records, in file order
	batches int         // batch lines
	cut     bool
	raw     []byte
}

// readChain reads the audit file at path from byte offset from on (line
// numbers count the lines before it). Only complete lines are records:
// the process may be writing the last one.
func readChain(t testing.TB, path string, from int) chainFile {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the audit file: %v", err)
	}
	cf := chainFile{raw: raw}
	n := bytes.Count(raw[:from], []byte("\n"))
	rest := raw[from:]
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			cf.cut = true
			break
		}
		n++
		var l chainLine
		var b batchLine
		if err := json.Unmarshal(rest[:i], &b); err != nil || json.Unmarshal(rest[:i], &l) != nil {
			t.Fatalf("audit file line %d is not JSON: %v: %.200s", n, err, rest[:i])
		}
		for k, r := range b.Records {
			r.line, r.index = n, k+1
			cf.lines = append(cf.lines, r)
		}
		if b.Records == nil {
			l.line = n
			cf.lines = append(cf.lines, l)
		}
		cf.batches += min(len(b.Records), 1)
		rest = rest[i+1:]
	}
	return cf
}

// run returns the lines of run, in file order.
func (cf chainFile) run(run string) []chainLine {
	var out []chainLine
	for _, l := range cf.lines {
		if l.Run == run {
			out = append(out, l)
		}
	}
	return out
}

// runSummary is what verify must say of one run.
type runSummary struct {
	lines       []chainLine
	checkpoints []chainLine
	kinds       map[string]int
}

func summarize(lines []chainLine) runSummary {
	s := runSummary{lines: lines, kinds: map[string]int{}}
	for _, l := range lines {
		s.kinds[l.Kind]++
		if l.Kind == "checkpoint" {
			s.checkpoints = append(s.checkpoints, l)
		}
	}
	return s
}

func (s runSummary) last() chainLine { return s.lines[len(s.lines)-1] }

// lastCheckpoint is the seq of the run's last checkpoint, 0 when none.
func (s runSummary) lastCheckpoint() uint64 {
	if len(s.checkpoints) == 0 {
		return 0
	}
	return s.checkpoints[len(s.checkpoints)-1].Seq
}

// tail is the records after the run's last checkpoint.
func (s runSummary) tail() []chainLine {
	var out []chainLine
	for _, l := range s.lines {
		if l.Seq > s.lastCheckpoint() {
			out = append(out, l)
		}
	}
	return out
}

// unprotectedLine is verify's line for a run's tail (cli/audit.go).
func unprotectedLine(file string, first chainLine, to uint64) string {
	return fmt.Sprintf("unprotected %s: instance %q run %q seq %d to %d: after the run's last checkpoint",
		first.pos(file), first.Instance, first.Run, first.Seq, to)
}

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

// crashClient drives the demo from goroutines: every call returns its
// error instead of failing the test.
type crashClient struct {
	g        *Gatehouse
	endpoint string // the token endpoint
}

// token logs user in with the password grant (the demo's users' password
// is their name).
func (c crashClient) token(ctx context.Context, user string) (string, error) {
	r := postRaw(ctx, c.g, c.endpoint, url.Values{"grant_type": {"password"}, "username": {user},
		"password": {user}, "client_id": {publicClient}})
	switch {
	case r.fault != nil:
		return "", fmt.Errorf("password grant: %w", r.fault)
	case r.status != http.StatusOK || r.str("access_token") == "":
		return "", fmt.Errorf("password grant: %d %v", r.status, r.body)
	}
	return r.str("access_token"), nil
}

// session opens /ws with token on the upgrade, subscribes to topics,
// waits for each confirmation, then calls hold (nil: close at once).
func (c crashClient) session(ctx context.Context, token string, topics []string, hold func(*websocket.Conn) error) error {
	d := websocket.Dialer{HandshakeTimeout: wsTimeout, Subprotocols: []string{"ServiceJson"}}
	conn, resp, err := d.DialContext(ctx, fmt.Sprintf("ws://127.0.0.1:%d/ws?version=1.1", c.g.Port),
		http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		return fmt.Errorf("dial: %w (%v)", err, resp)
	}
	defer conn.Close()
	for i, topic := range topics {
		tid := strconv.Itoa(i + 1)
		if err := conn.WriteMessage(websocket.TextMessage, []byte(msg("Market", topic, "Sub", tid))); err != nil {
			return fmt.Errorf("Sub %s: %w", topic, err)
		}
		conn.SetReadDeadline(time.Now().Add(wsTimeout))
		for {
			_, raw, err := conn.ReadMessage()
			if err != nil {
				return fmt.Errorf("waiting for the confirmation of %s: %w", topic, err)
			}
			var m liveMsg
			if json.Unmarshal(raw, &m) != nil || m.tid() != tid {
				continue // a snapshot or update of an earlier topic
			}
			if m.Action != "Sub" || !m.Confirm {
				return fmt.Errorf("Sub %s: %s", topic, raw)
			}
			break
		}
	}
	if hold != nil {
		return hold(conn)
	}
	return nil
}

// query selects the securities the token may read.
func (c crashClient) query(ctx context.Context, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.g.URL+"/query", strings.NewReader("select Code, Exchange from Security"))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := c.g.Client.Do(req)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("query: %s", resp.Status)
	}
	return nil
}

// once is one unit of the burst: a login, then a session with two
// subscriptions or a query, alternately, as demo or trader.
func (c crashClient) once(ctx context.Context, i int) error {
	user := []string{"demo", "trader"}[i%2]
	tok, err := c.token(ctx, user)
	if err != nil {
		return err
	}
	if i%3 == 2 {
		return c.query(ctx, tok)
	}
	return c.session(ctx, tok, []string{"Security!BHP.ASX", "Security!CBA.ASX"}, nil)
}

// crashBurst is the burst's goroutines and what they saw.
type crashBurst struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	killed atomic.Bool // set just before the kill: errors from then on are the crash's
	held   sync.WaitGroup

	mu     sync.Mutex
	done   int     // units completed
	cut    int     // units the kill cut short
	faults []error // errors before the kill
}

func (b *crashBurst) end(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err == nil:
		b.done++
	case b.killed.Load():
		b.cut++
	default:
		b.faults = append(b.faults, err)
	}
}

// startCrashBurst starts the holders (sessions open until the kill; it
// returns once they are subscribed) and the workers, which loop until the
// kill or the timeout.
func startCrashBurst(t *testing.T, c crashClient) *crashBurst {
	ctx, cancel := context.WithTimeout(t.Context(), crashBurstTimeout)
	b := &crashBurst{cancel: cancel}
	for i := range crashHolders {
		b.held.Add(1)
		b.wg.Go(func() {
			subscribed := sync.OnceFunc(b.held.Done)
			defer subscribed()
			tok, err := c.token(ctx, "trader")
			if err == nil {
				err = c.session(ctx, tok, []string{"Security!AIR.NZX", "Depth!BHP.ASX"}, func(conn *websocket.Conn) error {
					subscribed()
					stop := context.AfterFunc(ctx, func() { conn.Close() })
					defer stop()
					for { // until the kill closes the socket
						conn.SetReadDeadline(time.Now().Add(crashBurstTimeout))
						if _, _, err := conn.ReadMessage(); err != nil {
							return fmt.Errorf("holder %d: %w", i, err)
						}
					}
				})
			}
			b.end(err)
		})
	}
	t.Cleanup(b.wait) // a test that fails early still ends its goroutines
	b.held.Wait()
	for w := range crashWorkers {
		b.wg.Go(func() {
			for i := w; ctx.Err() == nil; i += crashWorkers {
				err := c.once(ctx, i)
				b.end(err)
				if err != nil {
					return
				}
			}
		})
	}
	return b
}

// wait ends the burst and waits for its goroutines.
func (b *crashBurst) wait() {
	b.cancel()
	b.wg.Wait()
}

// waitForKillPoint polls the audit file until the first run has a
// checkpoint after a login of the burst, at least crashMinTail records
// after its last checkpoint, and crashMinStarts subscriptions started:
// the kill then lands on a run with a signed part and a tail, in the
// middle of the burst.
func waitForKillPoint(t *testing.T, g *Gatehouse) {
	t.Helper()
	deadline := time.Now().Add(crashBurstTimeout)
	for {
		cf := readChain(t, g.AuditLog(), 0)
		if len(cf.lines) > 0 {
			s := summarize(cf.run(cf.lines[0].Run))
			_, covered := protectedRecord(s)
			if covered && len(s.tail()) >= crashMinTail && s.kinds["subscription_start"] >= crashMinStarts {
				t.Logf("killing at seq %d: %d checkpoints, %d records after the last, kinds %v",
					s.last().Seq, len(s.checkpoints), len(s.tail()), s.kinds)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit file did not reach the kill point within %s (%d complete lines)", crashBurstTimeout, len(cf.lines))
		}
		time.Sleep(crashPoll)
	}
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

// protectedRecord is an authentication record of the burst with outcome
// ok that a checkpoint after it covers: editing it is a problem, not an
// unprotected record. One inside a batch line when there is one, so that
// the edits below reach into a batch line.
func protectedRecord(s runSummary) (chainLine, bool) {
	var found []chainLine
	for _, l := range s.lines {
		if l.Kind == "authentication" && l.Attrs["outcome"] == "ok" && l.Seq < s.lastCheckpoint() {
			found = append(found, l)
		}
	}
	if len(found) == 0 {
		return chainLine{}, false
	}
	if i := slices.IndexFunc(found, func(l chainLine) bool { return l.index > 0 }); i >= 0 {
		return found[i], true
	}
	return found[0], true
}

// editRecord returns line (with its line break) with its record at index
// (0: the line's own) changed by edit, or taken out when edit returns nil
// (a record line then goes whole). A batch line is written again with its
// other records as they were.
func editRecord(t testing.TB, line []byte, index int, edit func([]byte) []byte) []byte {
	t.Helper()
	if index == 0 {
		if r := edit(line); r != nil {
			return r
		}
		return nil
	}
	var m map[string]json.RawMessage
	var recs []json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil || json.Unmarshal(m["records"], &recs) != nil {
		t.Fatalf("not a batch line: %s", line)
	}
	if r := edit(recs[index-1]); r != nil {
		recs[index-1] = r
	} else {
		recs = slices.Delete(recs, index-1, index)
	}
	var err error
	if m["records"], err = json.Marshal(recs); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// payloadFinal reports whether a checkpoint's JWS payload says final.
func payloadFinal(t testing.TB, jws string) bool {
	t.Helper()
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("a checkpoint's jws has %d parts", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("a checkpoint's jws payload: %v", err)
	}
	var p struct {
		Final bool `json:"final"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("a checkpoint's jws payload: %v: %s", err, raw)
	}
	return p.Final
}
