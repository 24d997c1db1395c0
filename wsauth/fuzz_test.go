package wsauth

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// FuzzVerbatimRun: the run verbatimRun measures is whole frames, each a
// final text or binary frame, unmasked, without RSV bits, of at most limit
// bytes, its header byte for byte what appendHeader writes for it (so the
// client gets what the frame-by-frame path would have framed), when own
// none that answers the gateway, the run within room; and it is as long
// as it can be: the frame after it, when whole, is not such a frame or
// does not fit.
func FuzzVerbatimRun(f *testing.F) {
	f.Add(append(rawFrame(true, 1, "abc", 0), rawFrame(true, 2, strings.Repeat("x", 300), 0)...), uint16(1000), uint16(2000), false)
	answer := `{"Controller":"Market","TransactionID":9007199254000003}`
	f.Add(append(rawFrame(true, 1, "abc", 0), rawFrame(true, 1, answer, 0)...), uint16(1000), uint16(2000), true) // the gateway's answer
	f.Add(append(rawFrame(true, 1, "abc", 0), rawFrame(true, 1, answer, 0)...), uint16(1000), uint16(2000), false)
	answer32 := `{"Controller":"Market","TransactionID":-2147483645}`
	f.Add(append(rawFrame(true, 1, "abc", 0), rawFrame(true, 1, answer32, 0)...), uint16(1000), uint16(2000), true)
	f.Add(append(rawFrame(true, 1, "abc", 0), rawFrame(true, 9, "ping", 0)...), uint16(10), uint16(100), false)
	f.Add(append(rawFrame(true, 1, "abc", 0), rawFrame(true, 1, "abcdefgh", 0)...), uint16(5), uint16(100), false) // over the limit
	f.Add(append(rawFrame(true, 1, "abc", 0), rawFrame(true, 1, "abcdefgh", 0)...), uint16(50), uint16(12), false) // over the room
	f.Add([]byte{0x81, 126, 0, 5, 'h', 'e', 'l', 'l', 'o'}, uint16(10), uint16(100), false)                        // not the shortest form
	f.Add([]byte{0x81, 0x85, 1, 2, 3, 4, 'h', 'e', 'l', 'l', 'o'}, uint16(10), uint16(100), false)                 // masked
	f.Add([]byte{0x01, 0x03, 'a', 'b', 'c', 0x80, 0x00}, uint16(10), uint16(100), false)                           // fragments
	f.Add([]byte{0xc1, 0x03, 'a', 'b', 'c'}, uint16(10), uint16(100), false)                                       // RSV1
	f.Add(rawFrame(true, 1, strings.Repeat("y", 200), 0)[:100], uint16(1000), uint16(1000), false)                 // cut short
	f.Add(append(rawFrame(true, 2, strings.Repeat("z", 70000), 0), 0x81, 0), uint16(65535), uint16(65535), false)  // a 64-bit length
	f.Fuzz(func(t *testing.T, b []byte, limit, room uint16, own bool) {
		prefixes := [][]byte{nil}
		if own { // each scheme's
			prefixes = [][]byte{schemeInt53.prefix, schemeInt32.prefix}
		}
		for _, own := range prefixes {
			n, k := verbatimRun(b, int64(limit), int(room), own)
			if n < 0 || n > len(b) || n > int(room) {
				t.Fatalf("run of %d bytes in %d, room %d", n, len(b), room)
			}
			rest := b
			for i := range k {
				fr, ok := refFrameAt(rest)
				if !ok || !fr.verbatim(limit, own) {
					t.Fatalf("frame %d of the run (%x...) is not one to send as it is", i, rest[:min(len(rest), 12)])
				}
				rest = rest[fr.size:]
			}
			if len(b)-len(rest) != n {
				t.Fatalf("run of %d bytes, its %d frames hold %d", n, k, len(b)-len(rest))
			}
			if fr, ok := refFrameAt(rest); ok && fr.verbatim(limit, own) && n+fr.size <= int(room) {
				t.Fatalf("the run stops before a frame it could take (%x...)", rest[:min(len(rest), 12)])
			}
		}
	})
}

// refFrame is a frame parsed the long way, whatever its kind: its first
// byte, header, payload and size; ok is false when b does not hold one
// whole.
type refFrame struct {
	b0           byte
	masked       bool
	hdr, payload []byte
	size         int
}

func refFrameAt(b []byte) (refFrame, bool) {
	if len(b) < 2 {
		return refFrame{}, false
	}
	n, h := uint64(b[1]&0x7f), 2
	switch n {
	case 126:
		if len(b) < 4 {
			return refFrame{}, false
		}
		n, h = uint64(binary.BigEndian.Uint16(b[2:])), 4
	case 127:
		if len(b) < 10 {
			return refFrame{}, false
		}
		n, h = binary.BigEndian.Uint64(b[2:]), 10
	}
	masked := b[1]&0x80 != 0
	if masked {
		h += 4
	}
	if len(b) < h || uint64(len(b)-h) < n {
		return refFrame{}, false
	}
	return refFrame{b0: b[0], masked: masked, hdr: b[:h], payload: b[h : h+int(n)], size: h + int(n)}, true
}

// verbatim: the frame can go to the client as it is (when own, the
// prefix of the gateway's TransactionIDs, its answers are dropped, not
// sent).
func (fr refFrame) verbatim(limit uint16, own []byte) bool {
	return (fr.b0 == 0x81 || fr.b0 == 0x82) && !fr.masked && len(fr.payload) <= int(limit) &&
		bytes.Equal(fr.hdr, appendHeader(nil, int(fr.b0&0xf), len(fr.payload), nil)) &&
		!(own != nil && answersGateway(fr.payload, own))
}
