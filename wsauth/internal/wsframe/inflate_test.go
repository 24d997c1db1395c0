package wsframe

import (
	"bytes"
	stdflate "compress/flate"
	"errors"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// compressed is data as a permessage-deflate payload made by the standard
// library's writer at level (a sync flush, its tail removed), ended with
// a final block when final.
func compressed(t testing.TB, data []byte, level int, final bool) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := stdflate.NewWriter(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(data)
	if final {
		_ = w.Close()
		return b.Bytes()
	}
	_ = w.Flush()
	return bytes.TrimSuffix(b.Bytes(), []byte{0, 0, 0xff, 0xff})
}

// TestInflate: a payload from Deflate, from another writer at each level,
// one ended with a final block (RFC 7692 §7.2.1 lets a sender), and the
// empty message's single byte (§7.2.3.6) decompress to the message,
// appended to what dst held; the limit is the decompressed size.
func TestInflate(t *testing.T) {
	msgs := [][]byte{[]byte(quote), []byte(strings.Repeat(quote, 200)), letters(5000), {}}
	for _, m := range msgs {
		var payloads [][]byte
		if n := Deflate(m, func(z []byte) { payloads = append(payloads, bytes.Clone(z)) }); n == 0 && len(m) > 300 && m[0] == '{' {
			t.Fatalf("%d bytes: Deflate did not shrink them", len(m))
		}
		for _, level := range []int{stdflate.NoCompression, stdflate.BestSpeed, stdflate.BestCompression} {
			payloads = append(payloads, compressed(t, m, level, false), compressed(t, m, level, true))
		}
		for i, z := range payloads {
			got, err := Inflate([]byte("prefix"), z, int64(len(m)))
			if err != nil || string(got) != "prefix"+string(m) {
				t.Fatalf("%d bytes, payload %d: %v, got %d bytes", len(m), i, err, len(got))
			}
		}
	}
	if got, err := Inflate(nil, []byte{0}, 0); err != nil || len(got) != 0 {
		t.Fatalf("the empty message's payload: %q, %v", got, err)
	}
}

// TestInflateBounded: a decompression bomb (16 MiB of zeros, some 16 KiB
// compressed) fails with ErrOverLimit having put out no more than the
// limit and one byte, and a payload that is no deflate stream fails with
// ErrInflate. It failed with the limit checked after the whole message
// was out (the bomb's 16 MiB then allocated).
func TestInflateBounded(t *testing.T) {
	bomb := compressed(t, make([]byte, 16<<20), stdflate.BestCompression, false)
	if len(bomb) > 64<<10 {
		t.Fatalf("the bomb is %d bytes compressed", len(bomb))
	}
	for _, limit := range []int64{0, 1, 1000, 1 << 20} {
		got, err := Inflate(nil, bomb, limit)
		if !errors.Is(err, ErrOverLimit) {
			t.Fatalf("limit %d: %v", limit, err)
		}
		if int64(len(got)) > limit+1 || cap(got) > int(2*limit+64) {
			t.Fatalf("limit %d: %d bytes out (capacity %d)", limit, len(got), cap(got))
		}
	}
	if _, err := Inflate(nil, []byte{0xff, 0xff, 0xff, 0xff}, 1<<20); !errors.Is(err, ErrInflate) {
		t.Fatalf("not deflate: %v", err)
	}
}

// TestParseDeflateHeader: with permessage-deflate, RSV1 is taken on the
// first frame of a text or binary message (Compressed), and refused as
// before on a continuation and on a control frame (RFC 7692 §6.1);
// ParseHeader refuses it everywhere.
func TestParseDeflateHeader(t *testing.T) {
	for _, tt := range []struct {
		b0   byte
		cont bool
		ok   bool
	}{
		{FinalBit | RSV1Bit | websocket.TextMessage, false, true},
		{RSV1Bit | websocket.BinaryMessage, false, true},
		{FinalBit | RSV1Bit, true, false},
		{FinalBit | RSV1Bit | websocket.PingMessage, false, false},
		{FinalBit | RSV1Bit | websocket.CloseMessage, true, false},
		{FinalBit | RSV1Bit | 0x20 | websocket.TextMessage, false, false},
	} {
		h, _, err := ParseDeflateHeader([]byte{tt.b0, 5}, tt.cont)
		if (err == nil) != tt.ok || err == nil && !h.Compressed {
			t.Errorf("%#x (cont %v): %+v, %v", tt.b0, tt.cont, h, err)
		}
		if _, _, err := ParseHeader([]byte{tt.b0, 5}, tt.cont); err == nil {
			t.Errorf("%#x (cont %v): ParseHeader took RSV1", tt.b0, tt.cont)
		}
	}
	if h, _, err := ParseDeflateHeader([]byte{FinalBit | websocket.TextMessage, 5}, false); err != nil || h.Compressed {
		t.Errorf("a plain frame: %+v, %v", h, err)
	}
}
