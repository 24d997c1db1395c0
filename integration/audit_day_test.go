package integration

import (
	"context"
	"encoding/json"
	"fmt"
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
)

// A scripted day through the demo binary, two instances on one store,
// and the usage report (docs/audit.md, "The usage report") held to a
// ground truth the test keeps itself: the wall-clock bounds of every
// subscription the gateway accepted, and the rows of every select.

// TestAuditDay runs a scripted day (dayScript: sessions of demo, trader
// and demo-service over both venues, on two instances, subscribing,
// unsubscribing, closing with subscriptions open, querying, some of it
// refused; viewer given NZX quotes with `gatehouse user entitle` mid-day)
// through the demo binary, stops both instances, and holds `gatehouse
// audit usage` of both instances' files to the ground truth the test
// kept (compareUsage); `gatehouse audit verify` passes on the same files.
// On PostgreSQL the two processes share one database (startPair); on
// SQLite they share one store file, as a CLI shares it with a running
// server (WAL; writers of other processes are waited for), so that both
// backends run the same two-instance day. It failed when the ground
// truth lost a subscription, when the report counted refused queries,
// and when the gateway recorded no end for the subscriptions of a
// session that closed.
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
		// `audit usage` refuses named files beside --config, and --db
		// names a SQLite store only: the report reads both instances'
		// files through a config of the PostgreSQL store whose logging
		// names both.
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

// daySubject is the sub of principal's records.
func daySubject(t *testing.T, principal string) string {
	if principal == serviceClient || principal == deskClient {
		return principal // a client_credentials token's sub is its client's id
	}
	return subjectOf(t, principal)
}

// dayChange is what entitleViewer did: viewer's new access token, or why
// there is none.
type dayChange struct {
	token string
	took  time.Duration
	err   error
}

// entitleViewer runs `gatehouse user entitle viewer NZX:quotes` on A's
// config as an operator would while both instances run, waits until one
// of them has written viewer's entitlement_change into its chain, and
// logs viewer in again at tokenURL: the token then holds the pair. It
// runs beside the day, so it returns its failure instead of failing the
// test.
func entitleViewer(instances [2]*Gatehouse, tokenURL, sub string) dayChange {
	g, began := instances[0], time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "user", "entitle", "viewer", dayChanged.String(), "--config", g.opts.Config)
	cmd.Dir, cmd.Env = repoRoot, g.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return dayChange{err: fmt.Errorf("gatehouse user entitle viewer %s: %v\n%s", dayChanged, err, out)}
	}
	deadline := time.Now().Add(wsTimeout)
	for !slices.ContainsFunc(instances[:], func(g *Gatehouse) bool { return wroteChange(g.AuditLog(), sub) }) {
		if time.Now().After(deadline) {
			return dayChange{err: fmt.Errorf("no instance wrote viewer's entitlement_change within %v", wsTimeout)}
		}
		time.Sleep(pollEvery)
	}
	resp, err := g.Client.PostForm(tokenURL, url.Values{"grant_type": {"password"}, "username": {"viewer"},
		"password": {"viewer"}, "client_id": {publicClient}})
	if err != nil {
		return dayChange{err: err}
	}
	defer resp.Body.Close()
	var tok tokenResponse
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != http.StatusOK {
		return dayChange{err: fmt.Errorf("viewer's login after the change: %s (%v)", resp.Status, err)}
	}
	return dayChange{token: tok.AccessToken, took: time.Since(began)}
}

// wroteChange reports whether the audit file path holds an
// entitlement_change of sub.
func wroteChange(path, sub string) bool {
	b, _ := os.ReadFile(path)
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, `"kind":"entitlement_change"`) && strings.Contains(line, `"sub":"`+sub+`"`) {
			return true
		}
	}
	return false
}

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
	tokens[[2]string{"0", "viewer"}] = instances[0].PasswordGrant(t, "viewer", "viewer").AccessToken
	var changed chan dayChange
	token := func(s daySession) string {
		if _, got := tokens[[2]string{"changed", s.principal}]; s.changed && !got {
			select {
			case c := <-changed:
				if c.err != nil {
					t.Fatalf("the day's change: %v", c.err)
				}
				t.Logf("the day's change: entitled, written to a chain and logged in again in %v", c.took.Round(time.Millisecond))
				tokens[[2]string{"changed", s.principal}] = c.token
			case <-time.After(cliTimeout + wsTimeout):
				t.Fatal("the day's change did not end within its bound")
			}
		}
		if s.changed {
			return tokens[[2]string{"changed", s.principal}]
		}
		return tokens[[2]string{strconv.Itoa(s.instance), s.principal}]
	}
	subject := func(p string) string { return daySubject(t, p) }
	tokenURL := instances[0].TokenEndpoint(t)

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
			want := entitledTo(s.pairs, topicOf(st.topic), symbolOf(st.topic))
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
		case stepEntitle:
			changed = make(chan dayChange, 1)
			go func() { changed <- entitleViewer(instances, tokenURL, subject("viewer")) }()
		case stepQuery:
			q := dayQueries[st.query]
			resp, res, body := g.query(t, token(s), "/query", "text/plain", q.iql)
			switch {
			case resp.StatusCode == http.StatusOK && q.venues:
				for _, pair := range s.pairs.Pairs() {
					if pair.Feed == "quotes" {
						k := dayPair{subject(s.principal), pair.Venue, pair.Feed}
						truth.queries[k]++
						truth.rows[k] += int64(len(res.Rows))
						truth.readRows[k] = truth.readRows[k] || len(res.Rows) > 0
					}
				}
			case resp.StatusCode == http.StatusOK:
			case strings.HasPrefix(q.iql, "select Nope") || !q.venues && (s.principal == serviceClient || s.principal == "viewer"):
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
