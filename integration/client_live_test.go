package integration

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The message gateway's live sockets as the tests of ws_live_test.go and
// ws_motif_test.go read them: a goroutine per socket reads every message
// (the demo backend's updates keep coming while a test waits for one
// answer), and the test takes them in order, with a deadline.

// Bounds of the waits of the live-session tests.
const (
	// liveTimeout bounds a wait for something the gateway's supervisor
	// does: a revocation reaches a session within the verifier's
	// revocation refresh (5s, for a revocation made by another process)
	// plus recheck_interval (3s) plus a supervisor walk (1s); doubled for
	// a loaded machine.
	liveTimeout = 20 * time.Second
	// settleTime is how long messages already in flight may still arrive
	// after the gateway stopped a feed (one demo tick is 1s).
	settleTime = time.Second
	// silentTime is how long a stopped feed must stay silent: more than
	// two ticks of the demo market, which sends an update per tick.
	silentTime = 2500 * time.Millisecond
	// pollEvery is the period of a test's polls of a live socket.
	pollEvery = 200 * time.Millisecond
)

// reservedPrefix begins the TransactionIDs the gateway reserves for its
// own messages to the backend (docs/configuration/gatehouse_ws.md, transaction_ids); none may reach a client that did
// not send one itself.
const reservedPrefix = "9007199254"

// liveMsg is one message from the gateway: the envelope, with the
// TransactionID as its JSON text (the profile of the original client
// echoes it exactly), and when it arrived.
type liveMsg struct {
	Controller    string          `json:"Controller"`
	Topic         string          `json:"Topic"`
	Action        string          `json:"Action"`
	TransactionID json.RawMessage `json:"TransactionID"`
	Confirm       bool            `json:"Confirm"`
	Data          json.RawMessage `json:"Data"`

	raw []byte
	at  time.Time
}

// tid is the TransactionID's JSON text, "" when there is none.
func (m *liveMsg) tid() string { return string(m.TransactionID) }

// errorCode is the Data of an Error message, "" for any other message.
func (m *liveMsg) errorCode() string {
	var code string
	if m.Action != "Error" || json.Unmarshal(m.Data, &code) != nil {
		return ""
	}
	return code
}

// isError reports whether m is the Error with code answering tid.
func (m *liveMsg) isError(tid, code string) bool {
	return m.tid() == tid && m.errorCode() == code
}

// identifyPush reports whether m is an Identify message the gateway pushed
// unasked (no TransactionID).
func (m *liveMsg) identifyPush() bool {
	return m.Controller == "Auth" && m.Topic == "Identify" && m.Action == "Publish" && m.tid() == ""
}

// update reports whether m is data of the subscription topic (Action
// Sub without TransactionID: a snapshot or an update).
func (m *liveMsg) update(topic string) bool {
	return m.Topic == topic && m.Action == "Sub" && m.tid() == ""
}

func (m *liveMsg) String() string { return string(m.raw) }

// identifyData is the Data of an Identify, QueryIdentify or AuthToken
// reply (docs/api-surface.md §2.5; ExpiresIn in the original client's profile).
type identifyData struct {
	Result      string   `json:"Result"`
	AccessToken string   `json:"AccessToken"`
	DisplayName string   `json:"DisplayName"`
	UserID      string   `json:"UserID"`
	ExpiryDate  string   `json:"ExpiryDate"`
	ExpiresIn   string   `json:"ExpiresIn"`
	Scope       []string `json:"Scope"`
}

// identify decodes m's Data as an Identify.
func identify(t testing.TB, m *liveMsg) identifyData {
	t.Helper()
	var d identifyData
	if err := json.Unmarshal(m.Data, &d); err != nil {
		t.Fatalf("not Identify data: %s: %v", m, err)
	}
	return d
}

// hasScope reports whether an Identify's Scope lists the area (Market,
// Trading, ...) with the demo's vendor.
func (d identifyData) hasScope(area string) bool {
	for _, s := range d.Scope {
		if s == "Gatehouse.Service."+area {
			return true
		}
	}
	return false
}

// liveConn is a client socket whose messages its own goroutine reads.
// Only the test's goroutine sends and takes messages.
type liveConn struct {
	t        testing.TB
	name     string
	c        *websocket.Conn
	in       chan *liveMsg // closed when the connection has ended
	stop     chan struct{}
	done     chan struct{}
	err      error     // why the connection ended; read after in is closed
	endedAt  time.Time // likewise
	reserved atomic.Int32
	taken    []*liveMsg // every message taken, in order
	recent   []string   // the last messages taken, for failure messages
}

// watch starts reading c; name tells the socket apart in failures. The
// reader ends when the test does.
func watch(t testing.TB, name string, c *websocket.Conn) *liveConn {
	l := &liveConn{t: t, name: name, c: c, in: make(chan *liveMsg, 4096), stop: make(chan struct{}), done: make(chan struct{})}
	go l.read()
	t.Cleanup(func() {
		close(l.stop)
		c.Close()
		<-l.done
	})
	return l
}

func (l *liveConn) read() {
	defer close(l.done)
	for {
		_, raw, err := l.c.ReadMessage()
		if err != nil {
			l.err, l.endedAt = err, time.Now()
			close(l.in)
			return
		}
		m := &liveMsg{raw: raw, at: time.Now()}
		if json.Unmarshal(raw, m) != nil {
			m.Action = "(not JSON)"
		}
		if strings.HasPrefix(strings.TrimPrefix(m.tid(), "-"), reservedPrefix) {
			l.reserved.Add(1)
		}
		select {
		case l.in <- m:
		case <-l.stop:
			return
		}
	}
}

// send writes one text message.
func (l *liveConn) send(msg string) {
	l.t.Helper()
	if err := l.c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		l.t.Fatalf("%s: sending %s: %v", l.name, msg, err)
	}
}

// until takes messages until one matches, within timeout, and returns
// them all, the matching one last.
func (l *liveConn) until(what string, timeout time.Duration, match func(*liveMsg) bool) []*liveMsg {
	l.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var taken []*liveMsg
	for {
		select {
		case m, ok := <-l.in:
			if !ok {
				l.t.Fatalf("%s: the connection ended (%v) before %s; last messages:\n%s", l.name, l.err, what, l.recentText())
			}
			l.remember(m)
			taken = append(taken, m)
			if match(m) {
				return taken
			}
		case <-timer.C:
			l.t.Fatalf("%s: %s did not come within %v; last messages:\n%s", l.name, what, timeout, l.recentText())
		}
	}
}

// next is the next message that matches, within timeout; others are
// dropped.
func (l *liveConn) next(what string, timeout time.Duration, match func(*liveMsg) bool) *liveMsg {
	l.t.Helper()
	taken := l.until(what, timeout, match)
	return taken[len(taken)-1]
}

// reply is the next message with TransactionID tid (its JSON text).
func (l *liveConn) reply(tid string) *liveMsg {
	l.t.Helper()
	return l.next("answer to TransactionID "+tid, wsTimeout, func(m *liveMsg) bool { return m.tid() == tid })
}

// request sends msg and returns the answer with TransactionID tid.
func (l *liveConn) request(msg, tid string) *liveMsg {
	l.t.Helper()
	l.send(msg)
	return l.reply(tid)
}

// pending takes the messages that have arrived, without waiting.
func (l *liveConn) pending() []*liveMsg {
	l.t.Helper()
	var taken []*liveMsg
	for {
		select {
		case m, ok := <-l.in:
			if !ok {
				l.t.Fatalf("%s: the connection ended (%v); last messages:\n%s", l.name, l.err, l.recentText())
			}
			l.remember(m)
			taken = append(taken, m)
		default:
			return taken
		}
	}
}

// closed waits, within timeout, for the connection to end and returns the
// close code the server sent and when it came; it fails the test when the
// connection ended without a close frame, or with detail.
func (l *liveConn) closed(timeout time.Duration) (int, time.Time) {
	l.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-l.in:
			if ok {
				l.remember(m)
				continue
			}
			ce, ok := errors.AsType[*websocket.CloseError](l.err)
			if !ok {
				l.t.Fatalf("%s: the connection ended without a close frame: %v", l.name, l.err)
			}
			if ce.Text != "" {
				l.t.Errorf("%s: close %d carries detail %q", l.name, ce.Code, ce.Text)
			}
			return ce.Code, l.endedAt
		case <-timer.C:
			l.t.Fatalf("%s: still open after %v; last messages:\n%s", l.name, timeout, l.recentText())
		}
	}
}

// reservedSeen is how many messages carrying a reserved TransactionID
// reached the client.
func (l *liveConn) reservedSeen() int { return int(l.reserved.Load()) }

// mark is a position in the messages taken, for since.
func (l *liveConn) mark() int { return len(l.taken) }

// since returns the messages taken after mark, those next, until and
// request dropped included.
func (l *liveConn) since(mark int) []*liveMsg { return l.taken[mark:] }

func (l *liveConn) remember(m *liveMsg) {
	l.taken = append(l.taken, m)
	const keep = 12
	if len(l.recent) == keep {
		l.recent = append(l.recent[:0], l.recent[1:]...)
	}
	l.recent = append(l.recent, m.at.Format("15:04:05.000")+" "+m.String())
}

func (l *liveConn) recentText() string {
	if len(l.recent) == 0 {
		return "(none)"
	}
	return strings.Join(l.recent, "\n")
}

// authTokenMsg is an AuthToken message with TransactionID tid (its JSON
// text) carrying accessToken as given (raw, or Base-64).
func authTokenMsg(tid, accessToken string) string {
	return `{"Controller":"Auth","Topic":"AuthToken","TransactionID":` + tid +
		`,"Data":{"Provider":"Bearer","AccessToken":` + strconv.Quote(accessToken) + `}}`
}

// msg is a message with Controller, Topic, Action and TransactionID tid
// (its JSON text).
func msg(controller, topic, action, tid string) string {
	return fmt.Sprintf(`{"Controller":%q,"Topic":%q,"Action":%q,"TransactionID":%s}`, controller, topic, action, tid)
}

// b64 is the standard Base-64 of a token, as the original client sends it
// and as Identify replies return it.
func b64(token string) string { return base64.StdEncoding.EncodeToString([]byte(token)) }

// tokenExpiry is the exp claim of a JWT.
func tokenExpiry(t testing.TB, token string) time.Time {
	t.Helper()
	_, claims := decodeJWT(t, token)
	exp, ok := claims["exp"].(float64)
	if !ok {
		t.Fatalf("the access token has no numeric exp: %v", claims["exp"])
	}
	return time.Unix(int64(exp), 0)
}

// zenithDateTime is t as a Zenith DateTime (ISO 8601 basic, UTC, to the
// second), as ExpiryDate carries it.
func zenithDateTime(t time.Time) string { return t.UTC().Format("20060102T150405Z") }

// logEntries returns the JSON entries of g's log whose msg is message.
func logEntries(t testing.TB, g *Gatehouse, message string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(g.Logs()) {
		if !strings.Contains(line, `"msg":"`+message+`"`) {
			continue
		}
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) == nil && e["msg"] == message {
			out = append(out, e)
		}
	}
	return out
}

// countEntries is how many of entries have every field of want.
func countEntries(entries []map[string]any, want map[string]any) int {
	n := 0
	for _, e := range entries {
		ok := true
		for k, v := range want {
			if e[k] != v {
				ok = false
				break
			}
		}
		if ok {
			n++
		}
	}
	return n
}

// waitForMetric polls g's metrics until series reaches at least want and
// returns its value.
func waitForMetric(t testing.TB, g *Gatehouse, series string, want float64) float64 {
	t.Helper()
	return pollMetric(t, g, series, fmt.Sprintf("at least %v", want), func(v float64) bool { return v >= want })
}

// metricBecomes polls g's metrics until series equals want (a gauge that a
// closing session of an earlier subtest may still hold up).
func metricBecomes(t testing.TB, g *Gatehouse, series string, want float64) {
	t.Helper()
	pollMetric(t, g, series, fmt.Sprint(want), func(v float64) bool { return v == want })
}

func pollMetric(t testing.TB, g *Gatehouse, series, want string, ok func(float64) bool) float64 {
	t.Helper()
	deadline := time.Now().Add(liveTimeout)
	for {
		v := metricValue(scrapeMetrics(t, g), series)
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("metric %s = %v after %v, want %s", series, v, liveTimeout, want)
		}
		time.Sleep(pollInterval)
	}
}
