package integration

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/entitle"
)

// The report TestAuditDay expects from what it saw, and the comparison
// with the one `gatehouse audit usage` prints.

// dayExpected is a row of the report as the ground truth has it: exact
// but for the peak, which is a range when steps ran so late that the
// order of a start and an end of the pair is not certain, and the
// minutes, which are within the sums of the subscriptions' shortest and
// longest live times the bounds allow.
type dayExpected struct {
	row                    audit.UsageRow
	peakMin, peakMax       int
	minutesMin, minutesMax float64
}

// expectedRows computes the report's rows from truth: every pair a
// principal holds (its days entitled: the day is today), with the
// subscriptions and queries of it.
func expectedRows(t *testing.T, truth *dayTruth) map[dayPair]*dayExpected {
	out := map[dayPair]*dayExpected{}
	held := map[string]entitle.Set{"viewer": dayChanged} // from the change on
	for _, p := range dayPrincipals {
		held[p] = dayPairs(p)
	}
	// The trading desk of Caddyfile.example takes no part in the day, but
	// holds its pairs: the day's snapshot names them, unused.
	held[deskClient] = entitle.MustParse("ASX:quotes ASX:depth NZX:quotes")
	for p, pairs := range held {
		subject, username := daySubject(t, p), p
		if p == serviceClient || p == deskClient {
			username = "" // a client has none
		}
		for _, pair := range pairs.Pairs() {
			k := dayPair{subject, pair.Venue, pair.Feed}
			out[k] = &dayExpected{row: audit.UsageRow{Subject: subject, Username: username, Venue: pair.Venue, Feed: pair.Feed, DaysEntitled: 1,
				Queries: truth.queries[k], RowsRead: truth.rows[k]}}
			if truth.readRows[k] {
				out[k].row.DaysUsed = 1
			}
		}
	}
	byPair := map[dayPair][]*daySub{}
	for _, s := range truth.subs {
		e := out[s.pair]
		if e == nil {
			t.Fatalf("an accepted subscription of %v, a pair not held", s.pair)
		}
		e.row.DaysUsed = 1
		e.minutesMin += (s.endLo.Sub(s.startHi) - dayMinuteSlack).Minutes()
		e.minutesMax += (s.endHi.Sub(s.startLo) + dayMinuteSlack).Minutes()
		e.row.SubscriptionMinutes = (e.minutesMin + e.minutesMax) / 2
		byPair[s.pair] = append(byPair[s.pair], s)
	}
	for k, subs := range byPair {
		// The fewest live at once whatever the records' times within
		// their bounds, and the most.
		out[k].peakMin = peak(subs, func(s *daySub) (time.Time, time.Time) { return s.startHi, s.endLo })
		out[k].peakMax = peak(subs, func(s *daySub) (time.Time, time.Time) { return s.startLo, s.endHi })
		out[k].row.PeakConcurrent = out[k].peakMax
		t.Logf("%v: %d subscriptions, peak %d to %d, %.5f to %.5f minutes", k, len(subs), out[k].peakMin, out[k].peakMax, out[k].minutesMin, out[k].minutesMax)
	}
	return out
}

// peak is the most of subs live at once, each over the half-open
// interval span gives (none when it is empty); at an instant, ends apply
// before starts, as in the report.
func peak(subs []*daySub, span func(*daySub) (time.Time, time.Time)) int {
	type edge struct {
		at time.Time
		n  int
	}
	var edges []edge
	for _, s := range subs {
		if a, b := span(s); a.Before(b) {
			edges = append(edges, edge{a, 1}, edge{b, -1})
		}
	}
	slices.SortFunc(edges, func(x, y edge) int { return cmp.Or(x.at.Compare(y.at), x.n-y.n) })
	n, most := 0, 0
	for _, e := range edges {
		n += e.n
		most = max(most, n)
	}
	return most
}

// usageReport is the JSON of `gatehouse audit usage --format json`.
type usageReport struct {
	From          string           `json:"from"`
	To            string           `json:"to"`
	Rows          []audit.UsageRow `json:"rows"`
	EndedAtRunEnd int              `json:"ended_at_run_end"`
	UnmatchedEnds int              `json:"unmatched_ends"`
}

// runAuditCLI runs `gatehouse audit <args>` with env, as an operator
// would after the servers stopped, and returns its standard output; it
// fails t unless the command exits 0.
func runAuditCLI(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"audit"}, args...)...)
	cmd.Dir = repoRoot
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gatehouse audit %s: %v\n%s%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	if stderr.Len() > 0 {
		t.Logf("gatehouse audit %s, its standard error:\n%s", args[0], bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes()
}

// compareUsage holds the report to the ground truth row by row: no row
// missing, none extra; days, queries and rows exact, the peak exact (or
// within its range when the steps ran late), the minutes within their
// bounds; no subscription ended at a run's end (every session was
// closed before the processes stopped), no end unmatched.
func compareUsage(t *testing.T, out []byte, day string, want map[dayPair]*dayExpected) {
	var rep usageReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("the usage report: %v\n%s", err, out)
	}
	if rep.From != day || rep.To != day || rep.EndedAtRunEnd != 0 || rep.UnmatchedEnds != 0 {
		t.Errorf("the report: from %s to %s, ended_at_run_end %d, unmatched_ends %d; want %s, %s, 0, 0",
			rep.From, rep.To, rep.EndedAtRunEnd, rep.UnmatchedEnds, day, day)
	}
	seen := map[dayPair]bool{}
	for _, got := range rep.Rows {
		k := dayPair{got.Subject, got.Venue, got.Feed}
		e := want[k]
		switch {
		case seen[k]:
			t.Errorf("the report has %v twice", k)
			continue
		case e == nil:
			t.Errorf("the report has a row the day did not make: %+v", got)
			continue
		}
		seen[k] = true
		w := e.row
		exact := got
		exact.SubscriptionMinutes, exact.PeakConcurrent = w.SubscriptionMinutes, w.PeakConcurrent
		if exact != w {
			t.Errorf("%v: the report has %+v, want %+v", k, got, w)
		}
		if got.PeakConcurrent < e.peakMin || got.PeakConcurrent > e.peakMax {
			t.Errorf("%v: peak_concurrent %d, want %d to %d", k, got.PeakConcurrent, e.peakMin, e.peakMax)
		}
		if got.SubscriptionMinutes < e.minutesMin || got.SubscriptionMinutes > e.minutesMax {
			t.Errorf("%v: subscription_minutes %.5f, want %.5f to %.5f", k, got.SubscriptionMinutes, e.minutesMin, e.minutesMax)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("the report has no row of %v, want %+v", k, want[k].row)
		}
	}
}
