package wsauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// fakeBackend is a small Zenith backend: it records the messages it gets
// and its upgrades' headers; it answers "echo" topics by echoing, "blast"
// by sending Data (a count) messages, "close" by closing with the code in
// Data, "say" by sending each string of Data (an array) as a message. A
// Sub gets a snapshot (Publish, Data "snapshot", the Sub's TransactionID
// text as sent), an Unsub a confirmation (Unsub, Confirm true, likewise).
type fakeBackend struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []string
	headers []http.Header
	urls    []string
	conns   []*websocket.Conn
	refuse  int // answer upgrades with this status
	closed  int // backend legs ended
	// closeCodes are the codes of the close frames the gateway sent.
	closeCodes []int
	// stall, closed at the test's end, is what a leg sent Topic "Stall"
	// waits for, reading nothing more.
	stall chan struct{}
}

func newFakeBackend(t testing.TB) *fakeBackend {
	b := &fakeBackend{stall: make(chan struct{})}
	// It accepts permessage-deflate when offered (Backend.Compression),
	// and then compresses every message.
	up := websocket.Upgrader{Subprotocols: []string{DefaultSubprotocol, "ZenithJson"}, EnableCompression: true}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.headers = append(b.headers, r.Header.Clone())
		b.urls = append(b.urls, r.URL.String())
		refuse := b.refuse
		b.mu.Unlock()
		if refuse != 0 {
			http.Error(w, "no", refuse)
			return
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns = append(b.conns, c)
		b.mu.Unlock()
		defer func() {
			c.Close()
			b.mu.Lock()
			b.closed++
			b.mu.Unlock()
		}()
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				if ce, ok := err.(*websocket.CloseError); ok {
					b.mu.Lock()
					b.closeCodes = append(b.closeCodes, ce.Code)
					b.mu.Unlock()
				}
				return
			}
			b.mu.Lock()
			b.got = append(b.got, string(msg))
			b.mu.Unlock()
			var env struct {
				Controller    string
				Topic         string
				Action        string
				TransactionID json.RawMessage
				Data          json.RawMessage
			}
			_ = json.Unmarshal(msg, &env)
			if env.Action == zenith.ActionSub || env.Action == zenith.ActionUnsub {
				tid := ""
				if env.TransactionID != nil {
					tid = `,"TransactionID":` + string(env.TransactionID)
				}
				reply := `{"Controller":` + strconv.Quote(env.Controller) + `,"Topic":` + strconv.Quote(env.Topic)
				if env.Action == zenith.ActionSub {
					reply += `,"Action":"Publish"` + tid + `,"Data":"snapshot"}`
				} else {
					reply += `,"Action":"Unsub"` + tid + `,"Confirm":true}`
				}
				_ = c.WriteMessage(websocket.TextMessage, []byte(reply))
				continue
			}
			switch env.Topic {
			case "Say":
				var says []string
				_ = json.Unmarshal(env.Data, &says)
				for _, m := range says {
					_ = c.WriteMessage(websocket.TextMessage, []byte(m))
				}
			case "Echo":
				_ = c.WriteMessage(websocket.TextMessage, msg)
			case "Stall":
				<-b.stall
			case "Blast":
				var n int
				_ = json.Unmarshal(env.Data, &n)
				payload := []byte(`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Publish","Data":{"Last":37.48,"Bid":37.47,"Ask":37.49}}`)
				for range n {
					if c.WriteMessage(websocket.TextMessage, payload) != nil {
						return
					}
				}
			case "Close":
				var code int
				_ = json.Unmarshal(env.Data, &code)
				_ = c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Zenith","Topic":"Bye"}`))
				_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, "internal detail"), time.Now().Add(time.Second))
				_, _, _ = c.ReadMessage()
				return
			}
		}
	}))
	t.Cleanup(b.srv.Close)
	t.Cleanup(func() { close(b.stall) }) // before Close, which waits for the handlers
	return b
}

func (b *fakeBackend) url() string { return "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/zenith" }

func (b *fakeBackend) received() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.got...)
}

func (b *fakeBackend) upgrades() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.headers)
}
