//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// dialTimeout bounds one WebSocket dial (TCP and the upgrade).
const dialTimeout = 10 * time.Second

// path is one way to the backend: through the gateway, through plain
// reverse_proxy, or direct.
type path struct {
	name     string
	url      string      // ws://…
	header   http.Header // the upgrade's Authorization, on the gateway
	proxy    *proxy      // nil for direct
	backend  *backend
	compress bool // offer permessage-deflate
}

// dial opens one WebSocket through p. Every byte the client reads or
// writes on it is added to wire.
func (p *path) dial(ctx context.Context, wire *atomic.Int64) (*websocket.Conn, error) {
	d := websocket.Dialer{
		HandshakeTimeout:  dialTimeout,
		Subprotocols:      []string{"ServiceJson"},
		EnableCompression: p.compress,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, network, addr)
			if err != nil || wire == nil {
				return c, err
			}
			return countingConn{c, wire}, nil
		},
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	ws, resp, err := d.DialContext(ctx, p.url, p.header)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("%s: dial: HTTP %d: %w", p.name, resp.StatusCode, err)
		}
		return nil, fmt.Errorf("%s: dial: %w", p.name, err)
	}
	if p.compress && !bytes.Contains([]byte(resp.Header.Get("Sec-WebSocket-Extensions")), []byte("permessage-deflate")) {
		ws.Close()
		return nil, fmt.Errorf("%s: permessage-deflate not negotiated", p.name)
	}
	return ws, nil
}

// countingConn counts the bytes read and written on a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// stampLen is the length of a Sent stamp: unix nanoseconds have 19
// digits from 2001 to 2286.
const stampLen = 19

// blastPrefix is the start of every message of a blast on topic
// Bench!<i>, up to the first letter of the first member of Data: S for
// Sent (a message), E for End.
func blastPrefix(i int) []byte {
	return fmt.Appendf(nil, `{"Controller":"Market","Topic":"Bench!%d","Action":"Sub","Data":{"`, i)
}

// blastSub is the Sub that asks the backend for a blast of f on Bench!<i>.
func blastSub(i int, f figure, rate float64, until time.Time) []byte {
	if f.market {
		return fmt.Appendf(nil, `{"Controller":"Market","Topic":"Bench!%d","Action":"Sub","Data":{"Payload":"market","Rate":%.3f,"Until":%d}}`,
			i, rate, until.UnixNano())
	}
	return fmt.Appendf(nil, `{"Controller":"Market","Topic":"Bench!%d","Action":"Sub","Data":{"Size":%d,"Rate":%.3f,"Until":%d}}`,
		i, f.size, rate, until.UnixNano())
}

// received is what one connection's receiver counted of a blast.
type received struct {
	n   int64           // messages that arrived inside the window
	lat []time.Duration // their latencies, when kept
	err error
}

// receive reads the blast on ws (topic Bench!<i>) until its end message:
// it counts the messages that arrive in [from, to) and, when keepLat,
// their latencies (arrival minus the backend's Sent stamp). It gives up at
// deadline.
func receive(ws *websocket.Conn, i int, from, to time.Time, keepLat bool, deadline time.Time) received {
	var r received
	prefix := blastPrefix(i)
	sentAt := len(prefix) + len(`Sent":`)
	f, t := from.UnixNano(), to.UnixNano()
	_ = ws.SetReadDeadline(deadline)
	var buf bytes.Buffer
	for {
		_, rd, err := ws.NextReader()
		if err != nil {
			r.err = fmt.Errorf("reading the blast: %w", err)
			return r
		}
		buf.Reset()
		if _, err := buf.ReadFrom(rd); err != nil {
			r.err = fmt.Errorf("reading the blast: %w", err)
			return r
		}
		now := time.Now().UnixNano()
		msg := buf.Bytes()
		if !bytes.HasPrefix(msg, prefix) || len(msg) <= len(prefix) {
			r.err = fmt.Errorf("unexpected message: %.200s", msg)
			return r
		}
		if msg[len(prefix)] == 'E' {
			return r
		}
		if now < f || now >= t {
			continue
		}
		r.n++
		if keepLat && len(msg) >= sentAt+stampLen {
			if sent, err := strconv.ParseInt(string(msg[sentAt:sentAt+stampLen]), 10, 64); err == nil {
				r.lat = append(r.lat, time.Duration(now-sent))
			}
		}
	}
}

// inTemplate is a client->backend message of exactly size bytes, a
// Publish of Market/BenchIn, and the offset of its Sent stamp.
func inTemplate(size int) ([]byte, int, error) {
	head := `{"Controller":"Market","Topic":"BenchIn","Action":"Publish","Data":{"Sent":`
	mid, end := `,"Pad":"`, `"}}`
	pad := size - len(head) - stampLen - len(mid) - len(end)
	if pad < 0 {
		return nil, 0, fmt.Errorf("message size %d below the envelope's", size)
	}
	b := make([]byte, 0, size)
	b = append(b, head...)
	b = append(b, "1000000000000000000"...)
	b = append(b, mid...)
	b = append(b, padding(pad)...)
	b = append(b, end...)
	return b, len(head), nil
}

// send writes size-byte BenchIn messages on ws, rate a second (0: as fast
// as the connection takes them), until the wall clock passes until. Each
// is stamped just before its write.
func send(ws *websocket.Conn, size int, rate float64, until time.Time) (int64, error) {
	msg, sentAt, err := inTemplate(size)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	var sent int64
	for {
		now := time.Now()
		if !now.Before(until) {
			return sent, nil
		}
		if rate > 0 {
			if due := int64(now.Sub(start).Seconds()*rate) + 1; sent >= due {
				next := start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))
				time.Sleep(max(next.Sub(now), 20*time.Microsecond))
				continue
			}
		}
		strconv.AppendInt(msg[:sentAt], now.UnixNano(), 10)
		_ = ws.SetWriteDeadline(now.Add(dialTimeout))
		if err := ws.WriteMessage(websocket.TextMessage, msg); err != nil {
			return sent, fmt.Errorf("sending: %w", err)
		}
		sent++
	}
}

// expectSilence reads ws until it fails (it is closed at the end of the
// trial): the backend never answers BenchIn, so any message is a refusal
// by the path (the gateway's Error), reported as the error.
func expectSilence(ws *websocket.Conn) error {
	_, msg, err := ws.ReadMessage()
	if err != nil {
		return nil
	}
	return fmt.Errorf("unexpected message: %.200s", msg)
}

// padding is n bytes of pseudo-random letters and digits, as the backend
// pads its messages: text that permessage-deflate shrinks to about 3/4.
func padding(n int) []byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = alphabet[x%uint32(len(alphabet))]
	}
	return b
}

var errNoMessages = errors.New("no message arrived in the window")
