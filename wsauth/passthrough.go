package wsauth

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// The backend's compressed messages (Backend.Compression). The backend
// leg offers permessage-deflate with server_no_context_takeover and
// client_no_context_takeover (gorilla's Dialer's one offer): a backend
// that accepts compresses each message alone, in a window of at most
// 2^server_max_window_bits bytes. The client leg's compressed messages are
// each alone too (server_no_context_takeover, which gorilla's Upgrader
// always answers), so one of the backend's compressed messages is, byte
// for byte, a message the gateway could have sent the client itself,
// provided its back-references reach no further than the client's window
// (compress.go's deflateWindow): passed on so, it costs the gateway no
// compression, which is most of what compressing costs.
//
// The gateway still reads every such message decompressed, as it reads
// the others: a text message must be valid UTF-8, Backend.MaxMessageBytes
// bounds the decompressed size (a decompression bomb is refused as any
// message over the bound: 1009 to the backend, 1011 to the client), and
// once the gateway has sent the backend messages of its own, the
// backend's answers to them are dropped. The frames it forwards are those
// of a message it read and left as it was. Decompressing costs a fraction
// of compressing (docs/performance.md, compression).
//
// The pass-through is on a TCP backend leg (backendFrames, which reads
// the frames itself). On a TLS leg gorilla reads the frames and
// decompresses them: the messages are then decided as uncompressed ones.

// legDeflate is what the backend leg negotiated of permessage-deflate.
type legDeflate struct {
	on     bool // the backend accepted the offer: its messages may be compressed
	window int  // the backend's window in bytes (server_max_window_bits), when on
}

// acceptedDeflate reads the backend's answer to the gateway's offer of
// permessage-deflate, the values of its 101's Sec-WebSocket-Extensions.
// RFC 7692 has the client fail the connection on an answer that accepts
// what was not offered (§5) or names a parameter not defined for a
// response, an invalid value or a parameter twice (§7). The gateway
// offered permessage-deflate once, with server_no_context_takeover and
// client_no_context_takeover and no window bits, so the answer names it
// once, with server_no_context_takeover (§7.1.1.1: how a server accepts
// that parameter; without it the answer accepts no offer made, and a
// message compressed with the previous ones' context could not be passed
// on alone), client_no_context_takeover or not (§7.1.1.2; gorilla's
// Dialer requires it, before this check), and server_max_window_bits or
// not (§7.1.2.1: a server may declare a smaller window unasked);
// client_max_window_bits, which the offer did not name, fails it
// (§7.1.2.2).
func acceptedDeflate(values []string) (legDeflate, error) {
	elems := strings.Split(strings.Join(values, ","), ",")
	if len(elems) != 1 {
		return legDeflate{}, fmt.Errorf("the backend answered the upgrade with extensions the gateway did not offer (%.64q)", strings.Join(values, ", "))
	}
	params := strings.Split(elems[0], ";")
	if strings.TrimSpace(params[0]) != "permessage-deflate" {
		return legDeflate{}, fmt.Errorf("the backend answered the upgrade with an extension the gateway did not offer (%.64q)", elems[0])
	}
	leg := legDeflate{on: true, window: 1 << 15}
	seen := map[string]bool{}
	for _, p := range params[1:] {
		name, value, hasValue := strings.Cut(strings.TrimSpace(p), "=")
		name = strings.TrimSpace(name)
		if seen[name] {
			return legDeflate{}, fmt.Errorf("the backend's permessage-deflate names %.32q twice", name)
		}
		seen[name] = true
		switch name {
		case "server_no_context_takeover", "client_no_context_takeover":
			if hasValue {
				return legDeflate{}, fmt.Errorf("the backend's permessage-deflate gives %.32q a value", name)
			}
		case "server_max_window_bits":
			v := strings.TrimSpace(value)
			if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			bits, err := strconv.Atoi(v)
			if err != nil || bits < 8 || bits > 15 || v[0] == '0' || v[0] == '+' {
				return legDeflate{}, fmt.Errorf("the backend's permessage-deflate has server_max_window_bits %.16q, not 8 to 15", value)
			}
			// zlib, asked for a window of 2^8 bytes, compresses in one of
			// 2^9: the larger is the one a back-reference may span.
			leg.window = 1 << max(bits, 9)
		default:
			return legDeflate{}, fmt.Errorf("the backend's permessage-deflate names %.32q, which the gateway did not offer", name)
		}
	}
	if !seen["server_no_context_takeover"] {
		return legDeflate{}, errors.New("the backend's permessage-deflate keeps its context between messages (no server_no_context_takeover)")
	}
	return leg, nil
}

// relayCompressed reads the backend's compressed message whose first
// frame is f (its header read), decompresses it into scratch within
// limit, checks it as backendFrames checks any message (valid UTF-8 for
// text), and passes it on: as it came when passes says so, else
// decompressed, as though the backend had sent it so (relayBackend, batch
// as there).
// false when the session is done. Backend reader only.
func (s *session) relayCompressed(bc *websocket.Conn, c *wsframe.Conn, f wsframe.Header, limit int64, batch bool) bool {
	b := &s.back
	n := int(f.Len)
	whole := f.Fin && n <= len(c.Buffered())
	var z []byte
	if whole {
		z = c.Buffered()[:n] // consumed once passed on
	} else {
		if b.zscratch == nil {
			b.zscratch = msgBufs.Get().(*[]byte)
		}
		b.reading = true // the hook must leave zscratch alone
		s.setBackendMessageAt(time.Now())
		var err error
		*b.zscratch, err = s.backendMessage(bc, c, f, (*b.zscratch)[:0], limit)
		s.setBackendMessageAt(time.Time{})
		b.reading = false
		if err != nil {
			s.backendEnded(err)
			return false
		}
		z = *b.zscratch
	}
	if b.scratch == nil {
		b.scratch = msgBufs.Get().(*[]byte)
	}
	msg, err := wsframe.Inflate((*b.scratch)[:0], z, limit)
	*b.scratch = msg
	switch {
	case errors.Is(err, wsframe.ErrOverLimit):
		err = backendOverLimit(bc)
	case err != nil:
		err = backendInvalidCompressed(bc)
	case f.Op == websocket.TextMessage && !utf8.Valid(msg):
		err = backendInvalidText(bc)
	}
	if err != nil {
		s.backendEnded(err)
		return false
	}
	var ok bool
	if b.passes(len(msg), len(z)) {
		ok = s.relayAsCompressed(int(f.Op), z)
	} else {
		ok = s.relayBackend(int(f.Op), batch)
	}
	if whole {
		c.Consume(n)
	}
	return ok
}

// passes reports whether a backend message of n bytes, compressed to zn,
// goes to the client compressed as it came: the client negotiated
// permessage-deflate, the message is no further back-reference than the
// client's window allows (one as long as the message at most, or the
// backend's window), and compressed it is the shorter. Else the client
// gets it decompressed, compressed again where the rule says
// (compress.go).
func (b *backendReader) passes(n, zn int) bool {
	return b.deflate && zn < n && (b.z.max == 0 || min(n, b.leg.window) <= b.z.max)
}

// relayAsCompressed passes on z, the compressed form of the backend
// message in scratch, but when it answers the gateway or nothing more is
// written to the client: framed into the reader's batch, or, larger than
// a batch, queued. false when the session is done. Backend reader only,
// on a client leg whose frames are the gateway's own.
func (s *session) relayAsCompressed(typ int, z []byte) bool {
	b := &s.back
	if s.subs.ownSent.Load() && answersGateway(*b.scratch, s.g.cfg().tids.prefix) {
		return true // the backend's answer to the gateway's own message
	}
	if s.close.writesEnded() {
		return true
	}
	n := wsframe.MaxHeader + len(z)
	if b.full(n) && !s.flushBatch() {
		return false
	}
	if n <= wsframe.BatchBytes {
		b.grow()
		b.batch = wsframe.AppendCompressed(b.batch, typ, z)
		b.batchMsgs++
		return true
	}
	bp := bigMsgBuf(len(z))
	*bp = append((*bp)[:0], z...)
	return s.put(outMsg{typ: typ, data: *bp, buf: bp, backend: true, compressed: true}, fromBackendReader)
}

// backendInvalidCompressed closes the leg with 1007: a compressed message
// that does not decompress.
func backendInvalidCompressed(bc *websocket.Conn) error {
	_ = bc.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInvalidFramePayloadData, "invalid compressed message"), time.Now().Add(time.Second))
	return errBackendInvalidCompressed
}

// errBackendInvalidCompressed ends a backend leg that sent a compressed
// message that does not decompress.
var errBackendInvalidCompressed = errors.New("the backend sent a compressed message that does not decompress")
