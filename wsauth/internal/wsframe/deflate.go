package wsframe

import (
	"bytes"
	"sync"

	"github.com/klauspost/compress/flate"
)

// Compression of the data frames a server's Conn writes itself, as
// permessage-deflate has it (RFC 7692) with no context takeover on the
// server's side: each message compressed alone, by a writer from a pool,
// reset for it (a compressor's state is some hundred kilobytes: one per
// message in flight, never one per connection).
//
// Gorilla's Upgrader answers an offer of permessage-deflate with
// server_no_context_takeover and client_no_context_takeover, whatever the
// client offered (RFC 7692 §7.1.1.1 and §7.1.1.2 let a server do so), and
// with no window bits: the server's window is then RFC 1951's 32 KiB, the
// most a flate writer uses (a client that asked for a smaller one is sent
// compressed only the messages within it: wsauth's deflateWindow). A message the server sends uncompressed (RSV1
// clear) is as valid as one it compresses (RFC 7692 §6).

// DeflateLevel is the flate level messages are compressed at. Measured
// on the demo market's Security updates (about 250 bytes each) and on
// random letters and digits (docs/performance.md, compression): levels 1
// to 5 cost about the same per small message (the per-message Huffman
// tables dominate), level 3 saves the most of them (24% of a Security
// update, against 14% at levels 1 and 2), and every level from 1 gives
// random letters up as incompressible almost at once.
const DeflateLevel = 3

// RSV1Bit is the RSV1 bit of a frame's first byte: with permessage-deflate
// negotiated, the frame's message is compressed (RFC 7692 §6).
const RSV1Bit = 0x40

// maxPooledDeflate bounds the output buffer a pooled compressor keeps: a
// larger message's compressed copy is left to the collector.
const maxPooledDeflate = BatchBytes

// deflater is a pooled compressor and the buffer it writes into.
type deflater struct {
	w   *flate.Writer
	out []byte
}

func (d *deflater) Write(p []byte) (int, error) {
	d.out = append(d.out, p...)
	return len(p), nil
}

var deflaters = sync.Pool{New: func() any {
	d := &deflater{}
	d.w, _ = flate.NewWriter(d, DeflateLevel) // a level in range never fails
	return d
}}

// syncTail is how a flush ends the compressed data (an empty stored
// block); RFC 7692 §7.2.1 has the sender remove it from each message.
var syncTail = []byte{0, 0, 0xff, 0xff}

// Deflate compresses data as a permessage-deflate message's payload and
// calls use with it when it is shorter than data; it reports the
// compressed length, 0 when use was not called (the message does not
// shrink: it goes uncompressed). The payload is valid only during use.
func Deflate(data []byte, use func(z []byte)) int {
	d := deflaters.Get().(*deflater)
	defer func() {
		if cap(d.out) > maxPooledDeflate {
			d.out = nil
		}
		deflaters.Put(d)
	}()
	d.out = d.out[:0]
	d.w.Reset(d)
	_, _ = d.w.Write(data) // d.Write never fails, nor then the flate writer
	_ = d.w.Flush()
	z, ok := bytes.CutSuffix(d.out, syncTail)
	if !ok || len(z) >= len(data) {
		return 0
	}
	use(z)
	return len(z)
}

// AppendDeflated appends to b the frame of a server (unmasked) holding
// the message data (typ websocket.TextMessage or BinaryMessage),
// compressed (RSV1 set) when that makes it shorter, else as it is. n is
// the compressed payload's length, 0 when the frame is uncompressed.
func AppendDeflated(b []byte, typ int, data []byte) (_ []byte, n int) {
	n = Deflate(data, func(z []byte) {
		b = AppendHeader(b, FinalBit|RSV1Bit|byte(typ), len(z), nil)
		b = append(b, z...)
	})
	if n == 0 {
		b = AppendHeader(b, FinalBit|byte(typ), len(data), nil)
		b = append(b, data...)
	}
	return b, n
}

// AppendFrameDeflated is AppendFrame with the message compressed when
// that makes it shorter (AppendDeflated), on a server's Conn whose client
// negotiated permessage-deflate (Deflate). n is the compressed payload's
// length, 0 when the frame went uncompressed.
func (c *Conn) AppendFrameDeflated(typ int, data []byte) (n int, err error) {
	n = Deflate(data, func(z []byte) {
		err = c.appendFrame(FinalBit|RSV1Bit|byte(typ), z)
	})
	if n == 0 {
		err = c.AppendFrame(typ, data)
	}
	return n, err
}

// AppendCompressed appends to b the frame of a server (unmasked) holding
// z, a message of type typ already compressed (a permessage-deflate
// payload, RFC 7692 §7.2.1), RSV1 set: a peer's compressed message passed
// on as it came.
func AppendCompressed(b []byte, typ int, z []byte) []byte {
	b = AppendHeader(b, FinalBit|RSV1Bit|byte(typ), len(z), nil)
	return append(b, z...)
}

// AppendFrameCompressed is AppendFrame of z, a message of type typ
// already compressed (AppendCompressed), on a server's Conn whose client
// negotiated permessage-deflate (Deflate).
func (c *Conn) AppendFrameCompressed(typ int, z []byte) error {
	return c.appendFrame(FinalBit|RSV1Bit|byte(typ), z)
}
