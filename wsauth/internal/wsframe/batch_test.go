package wsframe

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestAppendFrameKeepsOrder: frames appended to a Conn reach the
// socket in the order appended, whatever their sizes: a frame too large
// for a batch, written alone, does not overtake the batch before it (a
// 3-byte message then one of 65,530 bytes: the batch had room for the
// second's length but not for a batch's worth), on either leg.
func TestAppendFrameKeepsOrder(t *testing.T) {
	for _, client := range []bool{false, true} {
		for _, sizes := range [][]int{
			{3, 65530},
			{1, BatchBytes - MaxHeader + 1},
			{10, BatchBytes},
			{0, BatchBytes + 1},
			{3, 65530, 2, 70 << 10, 5},
			{100, BatchBytes - MaxHeader, 100},
		} {
			t.Run(fmt.Sprintf("client=%v/%v", client, sizes), func(t *testing.T) {
				a, b := net.Pipe()
				defer a.Close()
				defer b.Close()
				fc := newConn(a, client, 5*time.Second)
				got := make(chan error, 1)
				go func() {
					br := bufio.NewReader(b)
					defer func() { _, _ = io.Copy(io.Discard, br) }() // the writes never wait on a failed check
					for i, n := range sizes {
						_, p, err := readClientFrame(br)
						if err != nil {
							got <- fmt.Errorf("frame %d: %w", i, err)
							return
						}
						if len(p) != n || !bytes.Equal(p, payloadOf(i, n)) {
							got <- fmt.Errorf("frame %d: %d bytes, want the %d bytes of message %d (out of order)", i, len(p), n, i)
							return
						}
					}
					got <- nil
				}()
				for i, n := range sizes {
					if err := fc.AppendFrame(websocket.BinaryMessage, payloadOf(i, n)); err != nil {
						t.Fatalf("appendFrame %d: %v", i, err)
					}
				}
				if err := fc.Flush(); err != nil {
					t.Fatal(err)
				}
				if err := <-got; err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// readClientFrame reads one frame a Conn wrote, masked (a client's) or
// not: its opcode and its payload, unmasked.
func readClientFrame(br *bufio.Reader) (op byte, payload []byte, err error) {
	h, err := br.Peek(2)
	if err != nil {
		return 0, nil, err
	}
	size := 2 + map[byte]int{126: 2, 127: 8}[h[1]&0x7f]
	masked := h[1]&MaskBit != 0
	if masked {
		size += 4
	}
	if h, err = br.Peek(size); err != nil {
		return 0, nil, err
	}
	op, n := h[0]&0xf, uint64(h[1]&0x7f)
	if n == 126 {
		n = uint64(binary.BigEndian.Uint16(h[2:]))
	} else if n == 127 {
		n = binary.BigEndian.Uint64(h[2:])
	}
	var key [4]byte
	if masked {
		copy(key[:], h[size-4:])
	}
	_, _ = br.Discard(size)
	payload = make([]byte, n)
	if _, err = io.ReadFull(br, payload); err != nil {
		return 0, nil, err
	}
	return op, AppendMasked(payload[:0], payload, key), nil
}

// payloadOf is message i's payload, n bytes, each message's different.
func payloadOf(i, n int) []byte {
	return bytes.Repeat([]byte{byte('a' + i)}, n)
}

// TestLargeMaskedFrames: the backend leg's frames larger than a batch are
// masked a chunk at a time (writeMaskedLocked); the peer unmasks each to
// what was sent, the key carried across chunks whatever their sizes, and
// in order with the batched frames around them. Writing them makes no
// garbage of their size: a megabyte frame allocates far less than a copy.
func TestLargeMaskedFrames(t *testing.T) {
	a, b := tcpPair(t)
	fc := newConn(a, true, 5*time.Second)
	sizes := []int{10, BatchBytes - 100, BatchBytes, BatchBytes + 1, BatchBytes + 13, 3*BatchBytes + 5, 20, 1<<20 + 3}
	sent := make([][]byte, len(sizes))
	for i, n := range sizes {
		sent[i] = make([]byte, n)
		for j := range sent[i] {
			sent[i][j] = byte(j*7 + i + j>>8)
		}
	}
	got := make(chan error, 1)
	go func() {
		br := bufio.NewReader(b)
		for i, want := range sent {
			op, p, err := readClientFrame(br)
			if err == nil && (op != websocket.TextMessage || !bytes.Equal(p, want)) {
				err = fmt.Errorf("opcode %d, %d bytes, differ from the %d sent", op, len(p), len(want))
			}
			if err != nil {
				got <- fmt.Errorf("frame %d: %w", i, err)
				return
			}
		}
		got <- nil
		_, _ = io.Copy(io.Discard, br)
	}()
	for _, p := range sent {
		if err := fc.AppendFrame(websocket.TextMessage, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := fc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	big := sent[len(sent)-1]
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const writes = 20
	for range writes {
		if err := fc.AppendFrame(websocket.TextMessage, big); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / writes; per > uint64(len(big))/8 {
		t.Fatalf("%d bytes allocated per %d-byte frame", per, len(big))
	}
}
