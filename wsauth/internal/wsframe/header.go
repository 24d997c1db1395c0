package wsframe

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/gorilla/websocket"
)

const (
	// FinalBit is the FIN bit of a frame's first byte: the frame ends its
	// message.
	FinalBit = 0x80
	// MaskBit is the MASK bit of a frame's second byte: a mask key follows
	// the length.
	MaskBit = 0x80
	// MaxHeader is the longest frame header: 2 bytes, a 64-bit length, a
	// mask key.
	MaxHeader = 14
)

// AppendHeader appends the header of a frame whose first byte is first
// (FIN, the RSV bits and the opcode: FinalBit|websocket.TextMessage for a
// whole text message) with n bytes of payload, its length in the shortest
// form, masked with key when key is not nil (its 4 bytes follow the
// length).
func AppendHeader(b []byte, first byte, n int, key []byte) []byte {
	var m byte
	if key != nil {
		m = MaskBit
	}
	switch {
	case n < 126:
		b = append(b, first, m|byte(n))
	case n < 1<<16:
		b = append(b, first, m|126, byte(n>>8), byte(n))
	default:
		b = append(b, first, m|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, key...)
}

// Header is what a frame's header says, but its RSV bits and mask, which
// ParseHeader refuses (ParseDeflateHeader takes RSV1 where permessage-deflate
// allows it: Compressed).
type Header struct {
	Op         byte  // the opcode: websocket.TextMessage, PingMessage, ...; 0 continues a message
	Fin        bool  // the frame ends its message
	Len        int64 // the payload's length in bytes
	Compressed bool  // RSV1: the message is compressed (ParseDeflateHeader only)
}

// ParseHeader parses the header at the start of p of a frame a client
// reads (a server's: unmasked), and checks it as gorilla's reader does;
// cont is true within a fragmented message (a data frame must be a
// continuation), false between messages (it must not be one).
//
// size is the header's length, 2, 4 or 10 bytes, which its first two
// bytes tell: when p is shorter than size, h is not whole (its Len is the
// 7-bit length, 126 or 127) and the caller parses again once p holds size
// bytes; with fewer than 2 bytes it returns size 2 and nothing else.
//
// A header RFC 6455 forbids fails from its first two bytes, with a
// ProtocolError naming every fault in gorilla's words; a 64-bit length
// past the int64 range fails with websocket.ErrReadLimit, as gorilla's
// reader fails.
func ParseHeader(p []byte, cont bool) (h Header, size int, err error) {
	return parseHeader(p, cont, false)
}

// ParseDeflateHeader is ParseHeader on a connection that negotiated
// permessage-deflate: RSV1 is allowed on the first frame of a text or
// binary message (Compressed), as RFC 7692 §6 has it, and refused as
// ParseHeader refuses it on a continuation or a control frame (§6.1).
func ParseDeflateHeader(p []byte, cont bool) (h Header, size int, err error) {
	return parseHeader(p, cont, true)
}

func parseHeader(p []byte, cont, deflate bool) (h Header, size int, err error) {
	if len(p) < 2 {
		return Header{}, 2, nil
	}
	h = Header{Op: p[0] & 0xf, Fin: p[0]&FinalBit != 0, Len: int64(p[1] & 0x7f)}
	var errs []string
	if p[0]&RSV1Bit != 0 {
		if deflate && (h.Op == websocket.TextMessage || h.Op == websocket.BinaryMessage) {
			h.Compressed = true
		} else {
			errs = append(errs, "RSV1 set")
		}
	}
	if p[0]&0x20 != 0 {
		errs = append(errs, "RSV2 set")
	}
	if p[0]&0x10 != 0 {
		errs = append(errs, "RSV3 set")
	}
	switch int(h.Op) {
	case websocket.CloseMessage, websocket.PingMessage, websocket.PongMessage:
		if h.Len > 125 {
			errs = append(errs, "len > 125 for control")
		}
		if !h.Fin {
			errs = append(errs, "FIN not set on control")
		}
	case websocket.TextMessage, websocket.BinaryMessage:
		if cont {
			errs = append(errs, "data before FIN")
		}
	case 0: // continuation
		if !cont {
			errs = append(errs, "continuation after FIN")
		}
	default:
		errs = append(errs, "bad opcode "+strconv.Itoa(int(h.Op)))
	}
	if p[1]&MaskBit != 0 {
		errs = append(errs, "bad MASK")
	}
	if len(errs) > 0 {
		return Header{}, 0, ProtocolError(strings.Join(errs, ", "))
	}
	switch h.Len {
	case 126:
		if len(p) < 4 {
			return h, 4, nil
		}
		h.Len = int64(binary.BigEndian.Uint16(p[2:]))
		return h, 4, nil
	case 127:
		if len(p) < 10 {
			return h, 10, nil
		}
		h.Len = int64(binary.BigEndian.Uint64(p[2:]))
		if h.Len < 0 {
			return Header{}, 0, websocket.ErrReadLimit
		}
		return h, 10, nil
	}
	return h, 2, nil
}

// IsData reports whether h starts or continues a data message: a text,
// binary or continuation frame, not a control frame.
func (h Header) IsData() bool {
	return h.Op == 0 || h.Op == websocket.TextMessage || h.Op == websocket.BinaryMessage
}

// ProtocolError is what is wrong with a frame's header, in gorilla's
// words ("RSV2 set", "bad MASK"); a reader closes the connection with
// 1002 and it.
type ProtocolError string

func (e ProtocolError) Error() string { return "websocket: " + string(e) }
