package wsauth

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"
)

// modelBackend is a backend whose replies a model writes (reply, on one
// socket's subscriptions held): it keeps every message it received, and
// the subscriptions the last socket holds.
type modelBackend struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []string
	held map[[2]string]bool
}

func newModelBackend(t testing.TB, reply func(msg []byte, held map[[2]string]bool) []string) *modelBackend {
	b := &modelBackend{}
	up := websocket.Upgrader{Subprotocols: []string{DefaultSubprotocol, "ZenithJson"}}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		held := map[[2]string]bool{}
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			out := reply(msg, held)
			b.mu.Lock()
			b.got = append(b.got, string(msg))
			b.held = maps.Clone(held)
			b.mu.Unlock()
			for _, m := range out {
				if c.WriteMessage(websocket.TextMessage, []byte(m)) != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *modelBackend) url() string { return "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/zenith" }

func (b *modelBackend) received() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.got...)
}

// holds is how many subscriptions the backend holds.
func (b *modelBackend) holds() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.held)
}

// readUntilContains reads messages until one contains marker, returning
// those before it.
func readUntilContains(t testing.TB, c *websocket.Conn, marker string) []string {
	t.Helper()
	var got []string
	for range 10_000 {
		m := readMsg(t, c)
		if strings.Contains(m, marker) {
			return got
		}
		got = append(got, m)
	}
	t.Fatal("marker never came")
	return nil
}
