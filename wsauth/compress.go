package wsauth

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// Compression of the messages to a client that negotiated
// permessage-deflate (Transport.DisableCompression unset, and every
// browser offers it). RFC 7692 §6 lets a sender leave any message
// uncompressed, and compressing costs far more than framing: a message of
// a few hundred bytes takes microseconds to compress, against a fraction
// of one to relay (docs/performance.md, compression). So each message is
// compressed only where that pays (compressRule): it is long enough, and
// compression has saved enough on this session's recent messages; a
// message it would not shrink goes as it is (wsframe.Deflate). Each
// message is compressed alone (server_no_context_takeover, which gorilla's
// Upgrader always answers), by a pooled compressor.

const (
	// compressMinBytes: a shorter message goes uncompressed. Below it
	// deflate's per-message tables cost about what it saves: a market-data
	// update or a gateway reply cut to 128 bytes shrinks by 12%, to 96
	// bytes not at all.
	compressMinBytes = 128
	// compressSkip is how many messages of at least compressMinBytes go
	// uncompressed, once compression stopped paying, before the next one
	// is tried (a probe): a session's data may change. At 64 messages a
	// probe costs an incompressible session under 5% of the CPU it
	// saves.
	compressSkip = 63
	// compressWindow bounds the bytes the rule weighs: past it the sums
	// are halved, so the recent messages count most.
	compressWindow = 64 << 10
)

// compressRule decides, message by message, whether to compress. It
// weighs what compression saved on the messages tried since it last
// stopped paying: while they shrink to at most 7/8 of their size
// together (the demo market's Security updates shrink to 3/4), it tries
// every message; else it leaves the next compressSkip uncompressed and
// starts afresh with the one after. One goroutine's: the backend reader
// and the flusher each keep their own.
type compressRule struct {
	in, out int // bytes of the messages tried, and as sent (compressed or not)
	skip    int // messages left uncompressed before the next try
	max     int // longer messages are never compressed (deflateWindow); 0: no bound
}

// try reports whether to compress a message of n bytes; a message of at
// least compressMinBytes left uncompressed counts towards the next try.
func (r *compressRule) try(n int) bool {
	if n < compressMinBytes || r.max > 0 && n > r.max {
		return false
	}
	if r.skip > 0 {
		r.skip--
		return false
	}
	return true
}

// record notes a message tried: n bytes, compressed to z (0: it did not
// shrink, and went as it is).
func (r *compressRule) record(n, z int) {
	if z == 0 {
		z = n
	}
	r.in += n
	r.out += z
	if r.out*8 > r.in*7 {
		r.in, r.out, r.skip = 0, 0, compressSkip
		return
	}
	if r.in > compressWindow {
		r.in, r.out = r.in/2, r.out/2
	}
}

// deflateWindow is the longest message the gateway may compress for a
// client whose upgrade request h offers permessage-deflate with
// server_max_window_bits (RFC 7692 §7.1.2.1), 0 when it limits nothing.
// Gorilla's Upgrader accepts the first offer that names permessage-deflate
// and ignores its parameters, answering without the window bits, while
// the gateway's compressor looks back up to 32 KiB; a message no longer
// than the client's window has no back-reference beyond it (each message
// is compressed alone), so only the longer ones go uncompressed. A value
// the RFC does not allow (outside 8 to 15, or none) bounds to the
// smallest window.
func deflateWindow(h http.Header) int {
	for _, v := range h.Values("Sec-WebSocket-Extensions") {
		for offer := range strings.SplitSeq(v, ",") {
			params := strings.Split(offer, ";")
			if strings.TrimSpace(params[0]) != "permessage-deflate" {
				continue
			}
			for _, p := range params[1:] {
				name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.TrimSpace(name) != "server_max_window_bits" {
					continue
				}
				bits, err := strconv.Atoi(strings.Trim(strings.TrimSpace(value), `"`))
				if err != nil || bits < 8 || bits > 15 {
					bits = 8
				}
				if bits == 15 {
					return 0
				}
				return 1 << bits
			}
			return 0 // gorilla takes the first offer
		}
	}
	return 0
}

// carriesToken reports whether m is one of the gateway's own messages
// that names an access token (an Identify reply or push carrying the
// session's token, Auth.ReturnAccessToken): it is never compressed. A
// secret compressed beside text an attacker chooses shows in the
// message's compressed length (the CRIME and BREACH attacks).
func carriesToken(m *outMsg) bool {
	return !m.backend && bytes.Contains(m.data, []byte(`"AccessToken"`))
}

// appendOut appends m, a data message taken from the queue, to the
// client's batch, compressed when the client negotiated
// permessage-deflate and the flusher's rule says so, or as the backend
// compressed it (m.compressed). The flusher only.
func (s *session) appendOut(m *outMsg) error {
	w := s.client.wire
	if m.compressed {
		return w.AppendFrameCompressed(m.typ, m.data)
	}
	if !w.Deflate() || carriesToken(m) || !s.outZ.try(len(m.data)) {
		return w.AppendFrame(m.typ, m.data)
	}
	z, err := w.AppendFrameDeflated(m.typ, m.data)
	s.outZ.record(len(m.data), z)
	return err
}

// frame appends msg to the batch, framed as one final frame of op,
// compressed when the client negotiated permessage-deflate (deflate) and
// the reader's rule says so.
func (b *backendReader) frame(op byte, msg []byte) {
	b.grow()
	if b.deflate && b.z.try(len(msg)) {
		var z int
		b.batch, z = wsframe.AppendDeflated(b.batch, int(op), msg)
		b.z.record(len(msg), z)
	} else {
		b.batch = wsframe.AppendHeader(b.batch, wsframe.FinalBit|op, len(msg), nil)
		b.batch = append(b.batch, msg...)
	}
	b.batchMsgs++
}

// plain reports, for wsframe.VerbatimRun, whether msg, a backend message,
// goes to a client that negotiated permessage-deflate uncompressed, as it
// came (a message the rule would try stops the run).
func (b *backendReader) plain(msg []byte) bool {
	return !b.deflate || !b.z.try(len(msg))
}
