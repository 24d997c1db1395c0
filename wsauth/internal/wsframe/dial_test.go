package wsframe

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestUpgradeAnswerBoundedTLS: over TLS (no raw reads) the bound
// holds as well: a client Conn in its handshake fails a read past
// MaxUpgradeAnswer.
func TestUpgradeAnswerBoundedTLS(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		_, _ = b.Write([]byte("HTTP/1.1 101 Switching Protocols\r\n"))
		for range 100 {
			if _, err := b.Write([]byte("X-Pad: " + strings.Repeat("p", 1000) + "\r\n")); err != nil {
				return
			}
		}
	}()
	fc := NewClient(a, time.Second)
	br := bufio.NewReaderSize(fc, 1<<10)
	total := 0
	for {
		line, err := br.ReadSlice('\n')
		total += len(line)
		if err != nil {
			if !errors.Is(err, ErrUpgradeAnswer) {
				t.Fatalf("read failed with %v after %d bytes, want ErrUpgradeAnswer", err, total)
			}
			break
		}
	}
	if total > MaxUpgradeAnswer {
		t.Errorf("%d bytes of the answer were read, the bound is %d", total, MaxUpgradeAnswer)
	}
	// And an answer within the bound is read whole, the frames after it
	// left to the reader.
	a2, b2 := net.Pipe()
	defer a2.Close()
	defer b2.Close()
	go func() { _, _ = b2.Write([]byte("HTTP/1.1 101 OK\r\nA: b\r\n\r\n\x81\x02hi")) }()
	fc2 := NewClient(a2, time.Second)
	resp, err := http.ReadResponse(bufio.NewReader(fc2), nil)
	if err != nil || resp.StatusCode != 101 || fc2.handshake {
		t.Fatalf("answer within the bound: %v, %v, handshake still %v", resp, err, fc2.handshake)
	}
}
