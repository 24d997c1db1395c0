package wsauth

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/policy"
)

func TestFragmentedMessageIsForwardedWhole(t *testing.T) {
	e := newTestEnv(t, nil)
	// A small write buffer makes gorilla send the message in frames.
	d := &websocket.Dialer{Subprotocols: []string{DefaultSubprotocol}, WriteBufferSize: 256}
	c, _, err := e.tryDial(bearer(tokDemo), d)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := `{"Controller":"Market","Topic":"Echo","Data":"` + strings.Repeat("x", 4000) + `"}`
	w, err := c.NextWriter(websocket.TextMessage)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(msg); i += 100 {
		_, _ = w.Write([]byte(msg[i:min(i+100, len(msg))]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readMsg(t, c); got != msg {
		t.Fatalf("echo differs (%d bytes)", len(got))
	}
	if got := e.backend.received(); len(got) != 1 || got[0] != msg {
		t.Fatal("the backend did not receive the message whole")
	}
}

// TestRelayIntegrity: several sessions at once, each sending messages of
// many sizes (up to several of the legs' read and write batches, so a
// message spans socket reads and batches) without waiting, get each back
// from the backend's echo intact and in order: the batches, the pooled
// buffers and the queue never mix one message, or session, with another.
// Among them the backend sends a tiny message then one about a batch long
// (65,522 to 65,537 bytes: the largest that fit a batch, and the smallest
// written alone, after a batch with room for their length): the large
// one does not overtake the tiny one.
func TestRelayIntegrity(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.Limits.Default = policy.Limits{MessagesPerSecond: 1e9, Burst: 1 << 30}
	})
	const sessions, perSession = 4, 60
	type exchange struct {
		send string
		want []string // what the backend answers, in order
	}
	const refusedTID = `"TransactionID":9007199254000001`
	const refused = `{"Controller":"Market","Topic":"Echo",` + refusedTID + `}`
	refusedErr := errorMsg("Market", "Echo", 9007199254000001, CodeSession)
	var wg sync.WaitGroup
	for k := range sessions {
		c := e.dial(bearer(tokDemo))
		var xs []exchange
		for i := range perSession {
			size := []int{10, 200, 3000, 40 << 10, 100 << 10, 70 << 10, 1}[i%7] + i
			pad := make([]byte, size)
			for j := range pad {
				pad[j] = "abcdefghijklmnopqrstuvwxyz0123456789"[(j*7+i*13+k*31)%36]
			}
			m := `{"Controller":"Market","Topic":"Echo","TransactionID":` + strconv.Itoa(i) + `,"Data":"` + string(pad) + `"}`
			xs = append(xs, exchange{m, []string{m}})
			if i%3 == 0 {
				tiny := []string{"x", "abc", "{}"}[(i/3)%3]
				big := strings.Repeat(string(rune('a'+(i+k)%26)), []int{65522, 65523, 65530, 65535, 65536, 65537}[(i/3)%6])
				say, _ := json.Marshal([]string{tiny, big})
				// A refused message's Error, queued before the backend's
				// answers, has the client writer drain the queue as the
				// backend reader adds to them.
				xs = append(xs, exchange{refused, nil},
					exchange{`{"Controller":"Market","Topic":"Say","Data":` + string(say) + `}`, []string{tiny, big}})
			}
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for _, x := range xs {
				if err := c.WriteMessage(websocket.TextMessage, []byte(x.send)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
			errs, wantErrs := 0, 0 // the Errors read, and those queued before the next answer
			for i, x := range xs {
				if x.send == refused {
					wantErrs++
				}
				for _, want := range x.want {
					_, got, err := c.ReadMessage()
					for err == nil && string(got) == refusedErr {
						errs++ // it may come before the answers to what preceded it
						_, got, err = c.ReadMessage()
					}
					if err == nil && errs < wantErrs {
						t.Errorf("session %d, exchange %d: %d bytes %.20q… came before the Error queued ahead of it", k, i, len(got), got)
						return
					}
					if err != nil {
						t.Errorf("session %d, exchange %d: %v", k, i, err)
						return
					}
					if string(got) != want {
						t.Errorf("session %d, exchange %d: got %d bytes %.60q…, want %d bytes %.60q…", k, i, len(got), got, len(want), want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
