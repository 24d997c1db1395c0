package wsframe

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// letters is n pseudo-random letters and digits: text no level
// compresses (every flate level from 1 gives it up as incompressible).
func letters(n int) []byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return b
}

// quote is a market-data update of about 250 bytes, as the demo market
// sends them.
const quote = `{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","Data":{"High":45.12,"Low":45.08,"Last":45.08,"Trend":"Down","BestBid":45.06,"BidQuantity":7000,"BestAsk":45.10,"AskQuantity":5700,"NumberOfTrades":1,"Volume":1200,"ValueTraded":54096.00}}`

// TestDeflatedFramesReadByGorilla: the frames a server's Conn writes
// compressed (AppendFrameDeflated, and AppendDeflated into a batch of
// AppendFrames) are read back by gorilla's client, which negotiated
// permessage-deflate, as the messages sent, in order, beside uncompressed
// ones: small and large (larger than a batch, written alone), text and
// binary, compressible or not (sent as they are, RSV1 clear). It failed
// when the flush's tail was left on the payload (gorilla: "flate: corrupt
// input"), and when RSV1 was left clear (a compressed frame marked as
// not).
func TestDeflatedFramesReadByGorilla(t *testing.T) {
	u := upgrade(t, true, true, nil)
	if !u.srv.Deflate() {
		t.Fatal("permessage-deflate not negotiated")
	}
	type msg struct {
		typ        int
		data       []byte
		compressed bool // its frame is to be compressed
		batched    bool // framed by AppendDeflated, into AppendFrames
	}
	big := []byte(strings.Repeat(quote, 400)) // 100 KiB: more than a batch
	msgs := []msg{
		{websocket.TextMessage, []byte(quote), true, false},
		{websocket.TextMessage, letters(256), false, false},
		{websocket.TextMessage, []byte(strings.Repeat(quote, 30)), true, true},
		{websocket.BinaryMessage, letters(8 << 10), false, true},
		{websocket.TextMessage, []byte{}, false, false},
		{websocket.TextMessage, big, true, false},
		{websocket.BinaryMessage, []byte(quote), true, true},
		{websocket.TextMessage, []byte("plain, between compressed ones"), false, false},
	}
	u.srec.take()
	for i, m := range msgs {
		var n int
		var err error
		if m.batched {
			bp := GetBatch()
			var b []byte
			b, n = AppendDeflated((*bp)[:0], m.typ, m.data)
			err = u.srv.AppendFrames(b, bp)
		} else {
			n, err = u.srv.AppendFrameDeflated(m.typ, m.data)
		}
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if (n > 0) != m.compressed || n >= max(len(m.data), 1) {
			t.Fatalf("message %d (%d bytes): compressed to %d bytes, want compressed %v and shorter", i, len(m.data), n, m.compressed)
		}
	}
	if err := u.srv.Flush(); err != nil {
		t.Fatal(err)
	}
	var wire []byte
	for _, w := range u.srec.take() {
		wire = append(wire, w...)
	}
	_ = u.cc.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i, m := range msgs {
		if len(wire) < 2 || wire[0]&RSV1Bit != 0 != m.compressed {
			t.Fatalf("message %d: frame header %x, want RSV1 %v", i, wire[:min(len(wire), 2)], m.compressed)
		}
		hdr := append([]byte{wire[0] &^ RSV1Bit}, wire[1:min(len(wire), 10)]...)
		h, size, err := ParseHeader(hdr, false)
		if err != nil {
			t.Fatal(err)
		}
		wire = wire[size+int(h.Len):]
		typ, got, err := u.cc.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: gorilla's client read: %v", i, err)
		}
		if typ != m.typ || !bytes.Equal(got, m.data) {
			t.Fatalf("message %d: gorilla's client read type %d, %d bytes (%.40q), want type %d, %d bytes", i, typ, len(got), got, m.typ, len(m.data))
		}
	}
}

// TestDeflateSavesOnMarketData: a market-data update compresses alone at
// DeflateLevel to at most 80% of its size (the figure docs/performance.md
// and the session's rule rely on), and letters and digits not at all. It
// failed at level 1 (which leaves that update uncompressed).
func TestDeflateSavesOnMarketData(t *testing.T) {
	for _, tt := range []struct {
		data     []byte
		maxShare float64 // compressed size / size at most; 0: not compressed
	}{
		{[]byte(quote), 0.80},
		{letters(256), 0},
		{letters(8 << 10), 0},
	} {
		t.Run(fmt.Sprint(len(tt.data)), func(t *testing.T) {
			n := Deflate(tt.data, func([]byte) {})
			if share := float64(n) / float64(len(tt.data)); share > tt.maxShare || tt.maxShare > 0 && n == 0 {
				t.Fatalf("compressed %d bytes to %d (%.2f), want at most %.2f", len(tt.data), n, share, tt.maxShare)
			}
		})
	}
}
