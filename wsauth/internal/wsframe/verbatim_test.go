package wsframe

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf8"
)

// final is a server's frame (unmasked) ending its message: opcode op,
// payload p.
func final(op byte, p string) []byte {
	return append(AppendHeader(nil, FinalBit|op, len(p), nil), p...)
}

// marked is the drop predicate of FuzzVerbatimRun: a payload naming
// "drop" is one the caller does not send.
func marked(p []byte) bool { return bytes.Contains(p, []byte("drop")) }

// FuzzVerbatimRun: the run VerbatimRun measures is whole frames, each a
// final text or binary frame, unmasked, without RSV bits, of at most limit
// bytes, its header byte for byte what AppendHeader writes for it (so the
// client gets what the frame-by-frame path would have framed), a text
// frame's payload valid UTF-8, when drop none that drop reports, the run
// within room; and it is as long as it can be: the frame after it, when
// whole, is not such a frame or does not fit.
func FuzzVerbatimRun(f *testing.F) {
	f.Add(append(final(1, "abc"), final(2, strings.Repeat("x", 300))...), uint16(1000), uint16(2000), false)
	answer := `{"Controller":"Market","drop":1}`
	f.Add(append(final(1, "abc"), final(1, answer)...), uint16(1000), uint16(2000), true) // one to drop
	f.Add(append(final(1, "abc"), final(1, answer)...), uint16(1000), uint16(2000), false)
	f.Add(append(final(1, "abc"), final(9, "ping")...), uint16(10), uint16(100), false)
	f.Add(append(final(1, "abc"), final(1, "abcdefgh")...), uint16(5), uint16(100), false)            // over the limit
	f.Add(append(final(1, "abc"), final(1, "abcdefgh")...), uint16(50), uint16(12), false)            // over the room
	f.Add(append(final(1, "abc"), final(1, "\xe2\x82")...), uint16(50), uint16(100), false)           // not UTF-8
	f.Add(append(final(2, "abc"), final(2, "\xe2\x82")...), uint16(50), uint16(100), false)           // binary: any bytes
	f.Add([]byte{0x81, 126, 0, 5, 'h', 'e', 'l', 'l', 'o'}, uint16(10), uint16(100), false)           // not the shortest form
	f.Add([]byte{0x81, 0x85, 1, 2, 3, 4, 'h', 'e', 'l', 'l', 'o'}, uint16(10), uint16(100), false)    // masked
	f.Add([]byte{0x01, 0x03, 'a', 'b', 'c', 0x80, 0x00}, uint16(10), uint16(100), false)              // fragments
	f.Add([]byte{0xc1, 0x03, 'a', 'b', 'c'}, uint16(10), uint16(100), false)                          // RSV1
	f.Add(final(1, strings.Repeat("y", 200))[:100], uint16(1000), uint16(1000), false)                // cut short
	f.Add(append(final(2, strings.Repeat("z", 70000)), 0x81, 0), uint16(65535), uint16(65535), false) // a 64-bit length
	f.Fuzz(func(t *testing.T, b []byte, limit, room uint16, drop bool) {
		var dropFn func([]byte) bool
		if drop {
			dropFn = marked
		}
		n, k := VerbatimRun(b, int64(limit), int(room), dropFn)
		if n < 0 || n > len(b) || n > int(room) {
			t.Fatalf("run of %d bytes in %d, room %d", n, len(b), room)
		}
		rest := b
		for i := range k {
			fr, ok := refFrameAt(rest)
			if !ok || !fr.verbatim(limit, dropFn) {
				t.Fatalf("frame %d of the run (%x...) is not one to send as it is", i, rest[:min(len(rest), 12)])
			}
			rest = rest[fr.size:]
		}
		if len(b)-len(rest) != n {
			t.Fatalf("run of %d bytes, its %d frames hold %d", n, k, len(b)-len(rest))
		}
		if fr, ok := refFrameAt(rest); ok && fr.verbatim(limit, dropFn) && n+fr.size <= int(room) {
			t.Fatalf("the run stops before a frame it could take (%x...)", rest[:min(len(rest), 12)])
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

// verbatim: the frame can go to the client as it is (when drop is not
// nil, a payload it reports is dropped, not sent).
func (fr refFrame) verbatim(limit uint16, drop func([]byte) bool) bool {
	return (fr.b0 == 0x81 || fr.b0 == 0x82) && !fr.masked && len(fr.payload) <= int(limit) &&
		bytes.Equal(fr.hdr, AppendHeader(nil, fr.b0, len(fr.payload), nil)) &&
		(fr.b0 != 0x81 || utf8.Valid(fr.payload)) &&
		!(drop != nil && drop(fr.payload))
}
