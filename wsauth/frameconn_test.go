package wsauth

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestAppendFrameKeepsOrder: frames appended to a frameConn reach the
// socket in the order appended, whatever their sizes: a frame too large
// for a batch, written alone, does not overtake the batch before it (a
// 3-byte message then one of 65,530 bytes: the batch had room for the
// second's length but not for a batch's worth), on either leg.
func TestAppendFrameKeepsOrder(t *testing.T) {
	for _, client := range []bool{false, true} {
		for _, sizes := range [][]int{
			{3, 65530},
			{1, batchBytes - maxFrameHeader + 1},
			{10, batchBytes},
			{0, batchBytes + 1},
			{3, 65530, 2, 70 << 10, 5},
			{100, batchBytes - maxFrameHeader, 100},
		} {
			t.Run(fmt.Sprintf("client=%v/%v", client, sizes), func(t *testing.T) {
				a, b := net.Pipe()
				defer a.Close()
				defer b.Close()
				fc := newFrameConn(a, client, 5*time.Second)
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
					if err := fc.appendFrame(websocket.BinaryMessage, payloadOf(i, n)); err != nil {
						t.Fatalf("appendFrame %d: %v", i, err)
					}
				}
				if err := fc.flush(); err != nil {
					t.Fatal(err)
				}
				if err := <-got; err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// payloadOf is message i's payload, n bytes, each message's different.
func payloadOf(i, n int) []byte {
	return bytes.Repeat([]byte{byte('a' + i)}, n)
}
