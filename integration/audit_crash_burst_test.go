package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The crash test's burst: goroutines churning logins, sessions and
// queries against the demo until the kill, and the poll that picks the
// kill's moment from the audit file.

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
