package integration

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/entitle"
)

// A scripted day through the demo binary, two instances on one store,
// and the usage report (docs/audit.md, "The usage report") held to a
// ground truth the test keeps itself: the wall-clock bounds of every
// subscription the gateway accepted, and the rows of every select.

// The script's size and pace. Every step has a slot of its own, dayTick
// apart, so that the order of the audit's records is the order of the
// steps although each takes some milliseconds.
const (
	daySessions = 24
	daySpacing  = 6  // slots between sessions' opens, at most
	dayLife     = 20 // slots a session lives, at least
	dayTick     = 100 * time.Millisecond
	// dayCloseSlack is how long after the client saw its close echoed the
	// gateway may still be recording the session's subscription ends.
	dayCloseSlack = 100 * time.Millisecond
	// dayMinuteSlack is what each subscription's live time may be off by
	// beyond the bounds the test saw: the clock read between a record's
	// time and the test's.
	dayMinuteSlack = 5 * time.Millisecond
	// dayMinLife is the fewest slots a subscription lives: longer than
	// the width of the bounds of a pair's minutes, so that a lost
	// subscription shows in them.
	dayMinLife = 12
)

// dayPrincipals are the principals of the script: two users and the
// client-credentials client, with the pairs each holds.
var dayPrincipals = []string{"demo", "trader", serviceClient}

func dayPairs(principal string) entitle.Set {
	if principal == serviceClient {
		return entitle.MustParse("ASX:quotes") // Caddyfile.example's demo-service
	}
	return demoPairs[principal]
}

// dayTopics are the subscriptions the script picks from: quotes and depth
// of both venues, some of which each principal is refused.
var dayTopics = func() []string {
	var out []string
	for _, topic := range []string{"Security", "Depth"} {
		for _, sym := range replaySymbols {
			out = append(out, topic+"!"+sym)
		}
	}
	return out
}()

// dayQuery is a statement of the script's queries; venues says whether it
// reads the venue table (Security), whose selects the report counts.
type dayQuery struct {
	iql    string
	venues bool
}

var dayQueries = []dayQuery{
	{"select Code, Exchange from Security", true},
	{"select Code from Security where Exchange = 'NZX'", true},
	{"select Code from Security where Exchange = 'ASX'", true},
	{"select Code from Security where Code = 'NOPE'", true}, // ok, no row
	{"select Nope from Security", true},                     // refused: no such column
	{"select Headline from News", false},                    // no venue column; refused without Service/News
}

type stepKind int

const (
	stepOpen stepKind = iota
	stepSub
	stepUnsub
	stepClose
	stepQuery
)

// dayStep is one step of the script, on session (an index into the
// script's sessions).
type dayStep struct {
	kind    stepKind
	session int
	topic   string // stepSub, stepUnsub
	query   int    // stepQuery: an index into dayQueries
	slot    int    // when: dayTick times slot after the day's start
}

type daySession struct {
	principal string
	instance  int // 0 or 1
}

// dayScript is a deterministic random day: sessions opened on either
// instance daySpacing slots apart, each living dayLife slots or more,
// subscribing (to a pair it does not hold too), querying, unsubscribing
// after dayMinLife slots or more, and closing, some with subscriptions
// still open. Each step takes the first free slot at or after the one
// planned for it, after the session's earlier steps. It plans from the
// truth table of dayPairs; what happens is what the test then records.
func dayScript(seed uint64) ([]daySession, []dayStep) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var sessions []daySession
	var steps []dayStep
	taken := map[int]bool{}
	place := func(slot int, st dayStep) int {
		for taken[slot] {
			slot++
		}
		taken[slot], st.slot = true, slot
		steps = append(steps, st)
		return slot
	}
	for i := range daySessions {
		s := daySession{dayPrincipals[rng.IntN(len(dayPrincipals))], rng.IntN(2)}
		sessions = append(sessions, s)
		last := place(i*daySpacing+rng.IntN(daySpacing), dayStep{kind: stepOpen, session: i})
		closeAt := last + dayLife + rng.IntN(dayLife)
		type held struct {
			topic string
			slot  int
		}
		var holding []held
		var tried []string
		for range 1 + rng.IntN(4) {
			// Two thirds of the Subs are of a pair the principal holds,
			// so that subscriptions overlap; the others are mostly
			// refused.
			topics := dayTopics
			if rng.IntN(3) > 0 {
				topics = slices.DeleteFunc(slices.Clone(dayTopics), func(tp string) bool {
					return !entitledTo(dayPairs(s.principal), topicOf(tp), symbolOf(tp))
				})
			}
			topic := topics[rng.IntN(len(topics))]
			if slices.Contains(tried, topic) {
				continue // a second Sub of a topic replaces the first: no new subscription
			}
			tried = append(tried, topic)
			last = place(last+1+rng.IntN(4), dayStep{kind: stepSub, session: i, topic: topic})
			if entitledTo(dayPairs(s.principal), topicOf(topic), symbolOf(topic)) {
				holding = append(holding, held{topic, last})
			}
			if rng.IntN(2) == 0 {
				last = place(last+1+rng.IntN(4), dayStep{kind: stepQuery, session: i, query: rng.IntN(len(dayQueries))})
			}
		}
		for _, h := range holding {
			if rng.IntN(3) > 0 { // the others end with the session
				last = place(max(last+1, h.slot+dayMinLife)+rng.IntN(4), dayStep{kind: stepUnsub, session: i, topic: h.topic})
			}
			closeAt = max(closeAt, h.slot+dayMinLife)
		}
		place(max(last+1, closeAt), dayStep{kind: stepClose, session: i})
	}
	slices.SortFunc(steps, func(a, b dayStep) int { return a.slot - b.slot })
	return sessions, steps
}

func topicOf(topic string) string  { t, _, _ := strings.Cut(topic, "!"); return t }
func symbolOf(topic string) string { _, s, _ := strings.Cut(topic, "!"); return s }

// dayPair is one subject × venue × feed of the report.
type dayPair struct{ subject, venue, feed string }

// daySub is a subscription the gateway accepted: its start was recorded
// between startLo and startHi, its end between endLo and endHi.
type daySub struct {
	pair                           dayPair
	startLo, startHi, endLo, endHi time.Time
}

// dayTruth is what the test saw happen.
type dayTruth struct {
	subs           []*daySub
	queries, rows  map[dayPair]int64
	readRows       map[dayPair]bool
	refusedSubs    int
	refusedQueries int
	closedWithSubs int
}

// dayRun runs the script on instances (two processes on one store) and
// returns what it saw. Each session's principal gets its token from the
// instance it uses, before the day starts, so that the day's pace is not
// the password hash's.
func dayRun(t *testing.T, instances [2]*Gatehouse, seed uint64) *dayTruth {
	sessions, steps := dayScript(seed)
	t.Logf("the day: %d sessions, %d steps in %d slots of %v", len(sessions), len(steps), steps[len(steps)-1].slot+1, dayTick)
	tokens := map[[2]string]string{}
	for i, g := range instances {
		for _, p := range dayPrincipals {
			var tok tokenResponse
			if p == serviceClient {
				resp, body := g.PostToken(t, url.Values{"grant_type": {"client_credentials"}}, serviceClient, serviceSecret)
				tok = decodeToken(t, resp, body)
			} else {
				tok = g.PasswordGrant(t, p, p)
			}
			tokens[[2]string{strconv.Itoa(i), p}] = tok.AccessToken
		}
	}
	token := func(s daySession) string { return tokens[[2]string{strconv.Itoa(s.instance), s.principal}] }
	subject := func(p string) string {
		if p == serviceClient {
			return p // a client_credentials token's sub is its client's id
		}
		return subjectOf(t, p)
	}

	truth := &dayTruth{queries: map[dayPair]int64{}, rows: map[dayPair]int64{}, readRows: map[dayPair]bool{}}
	conns := map[int]*liveConn{}
	live := map[int]map[string]*daySub{} // each open session's accepted subscriptions
	tid := 10
	start := time.Now()
	for _, st := range steps {
		if wait := time.Until(start.Add(time.Duration(st.slot) * dayTick)); wait > 0 {
			time.Sleep(wait)
		}
		s := sessions[st.session]
		g := instances[s.instance]
		name := fmt.Sprintf("session %d (%s on %c)", st.session, s.principal, 'A'+s.instance)
		tid++
		id := strconv.Itoa(tid)
		switch st.kind {
		case stepOpen:
			conns[st.session] = liveSession(t, g, name, token(s))
			live[st.session] = map[string]*daySub{}
		case stepSub:
			c := conns[st.session]
			lo := time.Now()
			m := c.request(msg("Market", st.topic, "Sub", id), id)
			want := entitledTo(dayPairs(s.principal), topicOf(st.topic), symbolOf(st.topic))
			switch {
			case want && m.Action == "Sub" && m.Confirm:
				venue := symbolOf(st.topic)[strings.LastIndexByte(symbolOf(st.topic), '.')+1:]
				live[st.session][st.topic] = &daySub{pair: dayPair{subject(s.principal), venue, topicFeeds[topicOf(st.topic)]},
					startLo: lo, startHi: m.at}
			case !want && m.isError(id, "Authority"):
				truth.refusedSubs++
			default:
				t.Fatalf("%s: Sub %s: %s, want %s", name, st.topic, m, map[bool]string{true: "its confirmation", false: "Error/Authority"}[want])
			}
		case stepUnsub:
			c := conns[st.session]
			lo := time.Now()
			c.send(`{"Controller":"Market","Topic":` + strconv.Quote(st.topic) + `,"Action":"Unsub","TransactionID":` + id + `,"Confirm":true}`)
			m := c.reply(id)
			if m.Action != "Unsub" || !m.Confirm {
				t.Fatalf("%s: Unsub %s: %s, want its confirmation", name, st.topic, m)
			}
			sub := live[st.session][st.topic]
			sub.endLo, sub.endHi = lo, m.at
			truth.subs = append(truth.subs, sub)
			delete(live[st.session], st.topic)
		case stepClose:
			c := conns[st.session]
			lo := time.Now()
			if err := c.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), lo.Add(wsTimeout)); err != nil {
				t.Fatalf("%s: close: %v", name, err)
			}
			_, ended := c.closed(wsTimeout)
			if len(live[st.session]) > 0 {
				truth.closedWithSubs++
			}
			for _, sub := range live[st.session] {
				sub.endLo, sub.endHi = lo, ended.Add(dayCloseSlack)
				truth.subs = append(truth.subs, sub)
			}
			delete(live, st.session)
			delete(conns, st.session)
		case stepQuery:
			q := dayQueries[st.query]
			resp, res, body := g.query(t, token(s), "/query", "text/plain", q.iql)
			switch {
			case resp.StatusCode == http.StatusOK && q.venues:
				for _, pair := range dayPairs(s.principal).Pairs() {
					if pair.Feed == "quotes" {
						k := dayPair{subject(s.principal), pair.Venue, pair.Feed}
						truth.queries[k]++
						truth.rows[k] += int64(len(res.Rows))
						truth.readRows[k] = truth.readRows[k] || len(res.Rows) > 0
					}
				}
			case resp.StatusCode == http.StatusOK:
			case strings.HasPrefix(q.iql, "select Nope") || !q.venues && s.principal == serviceClient:
				truth.refusedQueries++
			default:
				t.Fatalf("%s: %s: %d %s", name, q.iql, resp.StatusCode, body)
			}
		}
	}
	t.Logf("the day took %v: %d subscriptions accepted, %d refused; %d sessions closed with subscriptions open; %d queries refused",
		time.Since(start).Round(time.Millisecond), len(truth.subs), truth.refusedSubs, truth.closedWithSubs, truth.refusedQueries)
	return truth
}

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
	for _, p := range dayPrincipals {
		subject := p
		if p != serviceClient {
			subject = subjectOf(t, p)
		}
		for _, pair := range dayPairs(p).Pairs() {
			k := dayPair{subject, pair.Venue, pair.Feed}
			out[k] = &dayExpected{row: audit.UsageRow{Subject: subject, Venue: pair.Venue, Feed: pair.Feed, DaysEntitled: 1,
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

// TestAuditDay runs a scripted day (dayScript: sessions of demo, trader
// and demo-service over both venues, on two instances, subscribing,
// unsubscribing, closing with subscriptions open, querying, some of it
// refused) through the demo binary, stops both instances, and holds
// `gatehouse audit usage` of both instances' files to the ground truth
// the test kept (compareUsage); `gatehouse audit verify` passes on the
// same files. On PostgreSQL the two processes share one database
// (startPair); on SQLite they share one store file, as a CLI shares it
// with a running server (WAL, and writers from other processes waited
// for), so that both days are the same two-instance day.
func TestAuditDay(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		skipNearMidnight(t)
		store := filepath.Join(t.TempDir(), "gatehouse.db")
		config := demoVariant(t, "audit-day-sqlite",
			configEdit{anchor: anchorIssuer, insert: "\t\tissuer {$GATEHOUSE_ISSUER}\n", replace: true},
			configEdit{anchor: anchorGatehouse, insert: "\t\tstore sqlite {$GATEHOUSE_STORE_PATH}\n"})
		env := []string{"GATEHOUSE_STORE_PATH=" + store}
		a := StartGatehouseWith(t, Options{Config: config, Env: env})
		b := StartGatehouseWith(t, Options{Config: config, Env: env, Issuer: a.Issuer})
		a.AlsoCheckSecretsOf(b)
		b.AlsoCheckSecretsOf(a)
		auditDay(t, [2]*Gatehouse{a, b}, 1, a.Env(), "--db", store, a.AuditLog(), b.AuditLog())
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		skipNearMidnight(t)
		config := multiConfig(t, "audit-day-postgres", true)
		a, b := startPair(t, config, freshDatabase(t))
		// `audit usage` takes the files named with --db (SQLite) or the
		// files of --config's logging section, not named files with
		// --config: the report reads both instances' files through a
		// config of the PostgreSQL store whose logging names both.
		orig, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		const anchor = "\tlog default {\n"
		if strings.Count(string(orig), anchor) != 1 {
			t.Fatalf("%s has no one %q", config, anchor)
		}
		report := writeConfig(t, "audit-day-report", strings.Replace(string(orig), anchor,
			"\tlog audit_b {\n\t\toutput file {$GATEHOUSE_AUDIT_LOG_B}\n\t\tformat json\n\t\tinclude gatehouse.audit.chain\n\t}\n"+anchor, 1))
		auditDay(t, [2]*Gatehouse{a, b}, 2, append(a.Env(), "GATEHOUSE_AUDIT_LOG_B="+b.AuditLog()), "--config", report)
	})
}

// skipNearMidnight skips a day that could cross a UTC midnight: the
// report's day is the day the test started.
func skipNearMidnight(t *testing.T) {
	if now := time.Now().UTC(); now.Truncate(audit.Day).Add(audit.Day).Sub(now) < 3*time.Minute {
		t.Skip("less than 3 minutes to a UTC midnight: the day would cross it")
	}
}

// auditDay runs the day on instances, stops them, and runs verify and
// usage with cliEnv and args (the store, and the files).
func auditDay(t *testing.T, instances [2]*Gatehouse, seed uint64, cliEnv []string, args ...string) {
	day := time.Now().UTC().Format(time.DateOnly)
	truth := dayRun(t, instances, seed)
	want := expectedRows(t, truth)
	overlap := false
	for _, e := range want {
		overlap = overlap || e.peakMin > 1
	}
	if !overlap || truth.closedWithSubs == 0 || truth.refusedSubs == 0 || truth.refusedQueries == 0 {
		t.Fatalf("the script (seed %d) lacks a part of the day: an overlap %v, %d sessions closed with subscriptions, %d refused subscriptions, %d refused queries",
			seed, overlap, truth.closedWithSubs, truth.refusedSubs, truth.refusedQueries)
	}
	instances[1].Stop()
	instances[0].Stop()
	if now := time.Now().UTC().Format(time.DateOnly); now != day {
		t.Skipf("the day crossed a UTC midnight (%s to %s)", day, now)
	}
	runAuditCLI(t, cliEnv, append([]string{"verify"}, args...)...)
	out := runAuditCLI(t, cliEnv, append([]string{"usage", "--from", day, "--to", day, "--format", "json"}, args...)...)
	compareUsage(t, out, day, want)
	if t.Failed() {
		t.Logf("the report:\n%s", out)
	}
}
