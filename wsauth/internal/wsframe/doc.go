// Package wsframe is the gateway's RFC 6455 framing, under gorilla's
// Conn: what the session writes and reads of the frames itself, for
// batching and for relaying a backend's frames to the client as they came.
//
// Gorilla keeps the handshake, control frames, and the reading of a
// client's compressed messages; the Conn under it carries the session's
// own data frames, batched, compressed or not (permessage-deflate, each
// message alone), beside gorilla's writes, and keeps in step with gorilla
// by what gorilla writes through it: the server's first Write is the
// Upgrader's whole 101 (NegotiatedDeflate: whether the session may
// compress), and a control frame is one Write, whole (IsCloseFrame: once
// a close frame is written, no data frame follows).
// On the backend leg, gorilla's Dialer reads the answer to its upgrade no
// further than its end, which the Conn gives it a line at a time: the
// frames after it are left to the session's own reader. gorilla_test.go
// drives gorilla's Upgrader, Dialer and Conn over a Conn and fails when
// gorilla stops keeping any of the three.
//
//	header.go   frame headers: AppendHeader, ParseHeader (a server's frame,
//	            checked as gorilla's reader checks it), ParseDeflateHeader
//	            (RSV1 where permessage-deflate allows it)
//	mask.go     masking: AppendMasked, and a masked frame larger than a
//	            batch written a chunk at a time
//	verbatim.go VerbatimRun: the run of a server's frames a client can be
//	            sent byte for byte
//	conn.go     Conn, the net.Conn under each leg's gorilla Conn
//	            (NewServer, NewClient): its hooks, Abort, gorilla's writes
//	read.go     its read side: the socket read into pooled buffers
//	            (Buffered, Need, Fill, Consume), the answer to the upgrade
//	            read a line at a time and bounded (MaxUpgradeAnswer)
//	batch.go    its batched writes of whole frames (AppendFrame,
//	            AppendFrames, WriteFrames, Flush) and their buffers
//	deflate.go  permessage-deflate: a message compressed alone by a
//	            pooled writer (Deflate, AppendDeflated,
//	            AppendFrameDeflated), at DeflateLevel, or passed on as a
//	            peer compressed it (AppendCompressed,
//	            AppendFrameCompressed)
//	inflate.go  a peer's compressed message decompressed, bounded
//	            (Inflate), by a pooled reader
//	gorilla.go  what a Conn learns of gorilla's state from its writes
//	            (NegotiatedDeflate, IsCloseFrame)
//	dial.go     Dial, DialTLS: the backend leg's Conn, for gorilla's Dialer
//	stream.go   NewStream: an extended CONNECT's stream as a net.Conn
//
// It imports the standard library, gorilla (its opcode constants and
// errors) and klauspost's flate (the compressor and decompressor),
// nothing of wsauth: what a session does with the frames is wsauth's
// (wsauth/deps_test.go holds the table).
package wsframe
