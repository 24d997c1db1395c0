package wsframe

import (
	"bytes"

	"github.com/gorilla/websocket"
)

// What a Conn learns of gorilla's state from the bytes gorilla writes
// through it (gorilla_test.go holds gorilla to both).

// NegotiatedDeflate reports whether first101, the first Write on a
// server's connection, is a 101 that names permessage-deflate: gorilla's
// Upgrader writes its whole answer in one Write, the extension among its
// header lines when it negotiated it.
func NegotiatedDeflate(first101 []byte) bool {
	return bytes.Contains(first101, []byte("\r\nSec-WebSocket-Extensions: permessage-deflate"))
}

// IsCloseFrame reports whether p, a Write of gorilla's, is a close frame:
// gorilla writes a control frame in one Write, whole, its first byte FIN
// and the opcode. Only on a connection whose data frames gorilla does not
// write (without permessage-deflate): a compressed data frame's payload
// may come in a Write of its own and begin with any byte.
func IsCloseFrame(p []byte) bool {
	return len(p) >= 2 && p[0] == FinalBit|websocket.CloseMessage
}
