// Package wsframe is the gateway's RFC 6455 framing, under gorilla's
// Conn: what the session writes and reads of the frames itself, for
// batching and for relaying a backend's frames to the client as they came.
//
//	header.go   frame headers: AppendHeader, ParseHeader (a server's frame,
//	            checked as gorilla's reader checks it)
//	mask.go     masking: AppendMasked
//	verbatim.go VerbatimRun: the run of a server's frames a client can be
//	            sent byte for byte
//
// It imports the standard library and gorilla (its opcode constants and
// errors), nothing of wsauth: what a session does with the frames is
// wsauth's (wsauth/deps_test.go holds the table).
package wsframe
