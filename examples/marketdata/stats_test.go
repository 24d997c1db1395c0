package marketdata

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// counts is an answer of Subscriptions: every venue and kind, zero unless
// want says otherwise.
func counts(want map[string]int) map[string]int {
	out := map[string]int{}
	for _, v := range demoVenues {
		out[v.code+"/"+kindSecurity], out[v.code+"/"+kindDepth] = 0, 0
	}
	maps.Copy(out, want)
	return out
}

// sync queries ServerInfo and reads up to the answer: the server has
// handled every message c sent before.
func (c *client) sync(id int64) {
	c.t.Helper()
	c.send(`{"Topic":"ServerInfo","TransactionID":` + strconv.FormatInt(id, 10) + `}`)
	for {
		if m := c.next(); m.Topic == "ServerInfo" && m.TransactionID != nil && *m.TransactionID == id {
			return
		}
	}
}

func marketMsg(action, topic string) string {
	return `{"Controller":"Market","Topic":"` + topic + `","Action":"` + action + `","Confirm":true}`
}

// TestSubscriptionCountSemantics walks one scenario step by step over two
// connections and checks Subscriptions exactly after each: a Sub counts
// once per connection and topic however often it is repeated, a refused
// Sub never, one Unsub ends it, and a connection's end ends all of its
// own. (It failed when remove left the subscriptions of a closed
// connection behind.)
func TestSubscriptionCountSemantics(t *testing.T) {
	s, srv := start(t, testConfig())
	conns := []*client{dial(t, srv, ""), dial(t, srv, "")}
	steps := []struct {
		name string
		conn int
		msg  string // "" closes the connection with a close frame
		want map[string]int
	}{
		{"sub", 0, marketMsg(actionSub, "Security!BHP.ASX"), map[string]int{"ASX/Security": 1}},
		{"sub again counts once", 0, marketMsg(actionSub, "Security!BHP.ASX"), map[string]int{"ASX/Security": 1}},
		{"another connection counts", 1, marketMsg(actionSub, "Security!BHP.ASX"), map[string]int{"ASX/Security": 2}},
		{"depth counts apart", 0, marketMsg(actionSub, "Depth!BHP.ASX"), map[string]int{"ASX/Security": 2, "ASX/Depth": 1}},
		{"NZX", 1, marketMsg(actionSub, "Security!AIR.NZX"), map[string]int{"ASX/Security": 2, "ASX/Depth": 1, "NZX/Security": 1}},
		{"NZX depth", 1, marketMsg(actionSub, "Depth!FPH.NZX"), map[string]int{"ASX/Security": 2, "ASX/Depth": 1, "NZX/Security": 1, "NZX/Depth": 1}},
		{"unknown venue is not counted", 0, marketMsg(actionSub, "Security!BHP.XYZ"), map[string]int{"ASX/Security": 2, "ASX/Depth": 1, "NZX/Security": 1, "NZX/Depth": 1}},
		{"one unsub ends a repeated sub", 0, marketMsg(actionUnsub, "Security!BHP.ASX"), map[string]int{"ASX/Security": 1, "ASX/Depth": 1, "NZX/Security": 1, "NZX/Depth": 1}},
		{"unsub again changes nothing", 0, marketMsg(actionUnsub, "Security!BHP.ASX"), map[string]int{"ASX/Security": 1, "ASX/Depth": 1, "NZX/Security": 1, "NZX/Depth": 1}},
		{"unsub of another's topic changes nothing", 0, marketMsg(actionUnsub, "Security!AIR.NZX"), map[string]int{"ASX/Security": 1, "ASX/Depth": 1, "NZX/Security": 1, "NZX/Depth": 1}},
		{"the end of a connection ends its subscriptions", 1, "", map[string]int{"ASX/Depth": 1}},
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			c := conns[st.conn]
			c.t = t
			want := counts(st.want)
			if st.msg == "" {
				_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(wait))
				c.closed()
				eventually(t, "the connection's subscriptions are gone", func() bool { return reflect.DeepEqual(s.Subscriptions(), want) })
				return
			}
			c.send(st.msg)
			c.sync(int64(1000 + i))
			if got := s.Subscriptions(); !reflect.DeepEqual(got, want) {
				t.Errorf("Subscriptions() = %v, want %v", got, want)
			}
		})
	}
}

// TestSubscriptionCountsUnderBursts has connections send bursts of Sub
// and Unsub (repeats and refused topics among them) at once, while the
// market ticks, then drops some of them. The counts must be exactly the
// sum of what each connection holds: at once after the bursts (each
// connection has read the answer to a query sent after its burst), and
// once the dropped connections are torn down.
func TestSubscriptionCountsUnderBursts(t *testing.T) {
	tests := []struct {
		name      string
		clients   int
		ops       int    // Sub and Unsub messages per connection
		drop      string // how the dropped connections end: "close" (a close frame), "vanish" (TCP closed without one)
		dropEvery int    // every dropEvery-th connection is dropped at the end; 0: none
		midBurst  bool   // the dropped connections end in the middle of their burst, not after it
	}{
		{"bursts", 8, 150, "", 0, false},
		{"drops with a close frame", 8, 150, "close", 2, false},
		{"drops without a close frame", 8, 150, "vanish", 3, false},
		{"drops in the middle of a burst", 8, 150, "vanish", 2, true},
		{"every connection vanishes", 6, 100, "vanish", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.TickInterval = 10 * time.Millisecond
			// Room for every answer of a burst and the updates meanwhile:
			// a reader starved of CPU is not the slow client this test is
			// about.
			cfg.SendQueue, cfg.SendQueueBytes = 1<<14, 64<<20
			s, srv := start(t, cfg)
			var names []string
			for _, tp := range s.market.topics {
				names = append(names, tp.name)
			}
			names = append(names, "Security!BHP.XYZ", "Depth!AIR.ASX") // refused, never counted

			held := make([]map[string]bool, tt.clients)
			wss := make([]*websocket.Conn, tt.clients)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range tt.clients {
				wss[i] = dial(t, srv, "").ws
				dropped := tt.dropEvery > 0 && i%tt.dropEvery == 0
				wg.Go(func() {
					<-start
					h, err := burst(wss[i], uint64(i), tt.ops, names, dropped && tt.midBurst)
					if err != nil {
						t.Errorf("connection %d: %v", i, err)
					}
					held[i] = h
				})
			}
			close(start)
			wg.Wait()
			if t.Failed() {
				t.FailNow()
			}
			want := func(dropped bool) map[string]int {
				out := counts(nil)
				for i, h := range held {
					if dropped && tt.dropEvery > 0 && i%tt.dropEvery == 0 {
						continue
					}
					for name := range h {
						tp := s.market.byTopic[name]
						out[tp.venue+"/"+tp.kind]++
					}
				}
				return out
			}
			if !tt.midBurst {
				if got, w := s.Subscriptions(), want(false); !reflect.DeepEqual(got, w) {
					t.Fatalf("after the bursts: Subscriptions() = %v, want %v", got, w)
				}
			}

			for i, ws := range wss {
				if tt.dropEvery == 0 || i%tt.dropEvery != 0 || tt.midBurst {
					continue
				}
				wg.Go(func() {
					if tt.drop == "close" {
						_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(wait))
						return
					}
					_ = ws.NetConn().Close()
				})
			}
			wg.Wait()
			w := want(true)
			eventually(t, "the counts of the connections left", func() bool { return reflect.DeepEqual(s.Subscriptions(), w) })
			eventually(t, "the dropped connections are gone", func() bool { return s.Connections() == len(wss)-dropCount(tt.clients, tt.dropEvery) })
			if got := s.Subscriptions(); !reflect.DeepEqual(got, w) {
				t.Errorf("at the end: Subscriptions() = %v, want %v", got, w)
			}
			if got := getStats(t, srv.URL); !reflect.DeepEqual(got.Subscriptions, w) {
				t.Errorf("%s: %v, want %v", StatsPath, got.Subscriptions, w)
			}
		})
	}
}

func dropCount(clients, every int) int {
	if every == 0 {
		return 0
	}
	return (clients + every - 1) / every
}

// burst sends ops Sub and Unsub messages on ws, topics drawn from names
// by a source seeded with seed, while reading the answers. Unless vanish
// is set it then queries ServerInfo, reads up to the answer and returns
// the topics ws holds: those of a confirmed Sub not followed by an Unsub.
// With vanish it closes the TCP connection right after the burst and
// holds nothing.
func burst(ws *websocket.Conn, seed uint64, ops int, names []string, vanish bool) (map[string]bool, error) {
	rng := rand.New(rand.NewPCG(seed, 99))
	const syncID = 1 << 40
	read := make(chan error, 1)
	go func() {
		for {
			_ = ws.SetReadDeadline(time.Now().Add(wait))
			_, raw, err := ws.ReadMessage()
			if err != nil {
				read <- err
				return
			}
			var m struct {
				Topic         string
				TransactionID *int64
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				read <- err
				return
			}
			if m.Topic == "ServerInfo" && m.TransactionID != nil && *m.TransactionID == syncID {
				read <- nil
				return
			}
		}
	}()
	held := map[string]bool{}
	for range ops {
		name := names[rng.IntN(len(names))]
		action := actionSub
		if rng.IntN(5) < 2 {
			action = actionUnsub
		}
		if err := ws.WriteMessage(websocket.TextMessage, []byte(marketMsg(action, name))); err != nil {
			return nil, err
		}
		switch {
		case action == actionUnsub:
			delete(held, name)
		case name != "Security!BHP.XYZ" && name != "Depth!AIR.ASX":
			held[name] = true
		}
	}
	if vanish {
		_ = ws.NetConn().Close()
		<-read
		return nil, nil
	}
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"Topic":"ServerInfo","TransactionID":`+strconv.Itoa(syncID)+`}`)); err != nil {
		return nil, err
	}
	if err := <-read; err != nil {
		return nil, err
	}
	return held, nil
}

// getStats reads the stats endpoint of the server at base.
func getStats(t *testing.T, base string) Stats {
	t.Helper()
	resp, err := http.Get(base + StatsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %s, %s", StatsPath, resp.Status, resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestStatsEndpoint checks GET /stats: this machine gets the counts and
// the connections, another machine 403, another method 405; a WebSocket
// upgrade at that path is still a connection, and other paths are
// unchanged.
func TestStatsEndpoint(t *testing.T) {
	s, srv := start(t, testConfig())
	c := dial(t, srv, "")
	c.send(marketMsg(actionSub, "Depth!SPK.NZX"))
	c.sync(1)
	got := getStats(t, srv.URL)
	if want := (Stats{Connections: 1, Subscriptions: counts(map[string]int{"NZX/Depth": 1})}); !reflect.DeepEqual(got, want) {
		t.Errorf("stats %+v, want %+v", got, want)
	}

	tests := []struct {
		name, method, path, remote string
		want                       int
	}{
		{"loopback", http.MethodGet, StatsPath, "127.0.0.1:4000", http.StatusOK},
		{"loopback IPv6", http.MethodHead, StatsPath, "[::1]:4000", http.StatusOK},
		{"another machine", http.MethodGet, StatsPath, "10.0.0.5:4000", http.StatusForbidden},
		{"another machine, IPv6", http.MethodGet, StatsPath, "[2001:db8::1]:80", http.StatusForbidden},
		{"not an address", http.MethodGet, StatsPath, "localhost", http.StatusForbidden},
		{"another method", http.MethodPost, StatsPath, "127.0.0.1:4000", http.StatusMethodNotAllowed},
		{"another path", http.MethodGet, "/stats/", "127.0.0.1:4000", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, nil)
			r.RemoteAddr = tt.remote
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("%s %s from %s: %d, want %d", tt.method, tt.path, tt.remote, w.Code, tt.want)
			}
		})
	}

	t.Run("upgrade at the path", func(t *testing.T) {
		c := dialWith(t, "ws"+srv.URL[len("http"):]+StatsPath, nil, &websocket.Dialer{})
		c.send(`{"Topic":"ServerInfo","TransactionID":2}`)
		if m := c.next(); m.Topic != "ServerInfo" {
			t.Errorf("got %s", m.raw)
		}
	})
}

func TestFromLoopback(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:5555", true},
		{"127.9.9.9:1", true},
		{"[::1]:80", true},
		{"[::ffff:127.0.0.1]:2", true},
		{"127.0.0.1", true},
		{"10.0.0.5:4321", false},
		{"[2001:db8::1]:80", false},
		{"[::ffff:10.0.0.1]:2", false},
		{"localhost:80", false},
		{"not an address", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got := FromLoopback(tt.addr); got != tt.want {
				t.Errorf("FromLoopback(%q) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
}
