package wsframe

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// VerbatimRun measures the run of frames at the start of b that a client
// can be sent as they are, byte for byte (a server's frames are unmasked,
// whichever server sends them): whole, each a message of its own (text or
// binary, FIN set, no RSV bit) of at most limit bytes, its length in the
// shortest form (as AppendHeader writes it), the run at most room bytes,
// none a text message that is not valid UTF-8 (a reader taking frames one
// by one refuses it), and, when drop is not nil, none whose payload drop
// reports (the caller does not send it). It returns the run's length and
// its number of frames; 0, 0 when the first frame is not such a frame.
func VerbatimRun(b []byte, limit int64, room int, drop func(payload []byte) bool) (n, frames int) {
	for {
		r := b[n:]
		if len(r) < 2 || r[0] != FinalBit|websocket.TextMessage && r[0] != FinalBit|websocket.BinaryMessage {
			return n, frames
		}
		size, hdr := int(r[1]), 2
		switch {
		case size < 126:
		case size == 126 && len(r) >= 4:
			size, hdr = int(binary.BigEndian.Uint16(r[2:])), 4
			if size < 126 {
				return n, frames // not the shortest form
			}
		default: // masked, a 64-bit length, or the header cut short
			return n, frames
		}
		if int64(size) > limit || hdr+size > len(r) || n+hdr+size > room {
			return n, frames
		}
		if drop != nil && drop(r[hdr:hdr+size]) {
			return n, frames
		}
		if r[0] == FinalBit|websocket.TextMessage && !utf8.Valid(r[hdr:hdr+size]) {
			return n, frames // a reader taking frames one by one refuses it
		}
		n += hdr + size
		frames++
	}
}
