// Package wsauth is the message-service gateway's core: what sits between a
// client's WebSocket and the backend's, without the sockets. This first
// layer is pure:
//
//	envelope.go  Scan, the strict reader of client->backend messages
//	decoder.go   its pooled jsontext decoder and error wording
//	policy.go    Policy, the Controller/Topic -> scope table
//	zenith.go    the gateway's own messages (Error, the Identify reply),
//	             the Zenith DateTime and TimeSpan, the AuthToken request
//
// Session state and the relay come on top of it.
//
// Goroutines: Scan, the Append functions and ParseAuthToken keep no state
// between calls and are safe for concurrent use; an Envelope aliases the
// message it was scanned from and belongs to the goroutine that scanned it
// (the connection's reader). A Policy is immutable once built and safe for
// concurrent use; a PolicyConfig is a value not to be changed while
// NewPolicy reads it.
//
// This package must not depend on Caddy (a test in caddymodule fails if it
// does) nor on the identity server: it takes plain config structs, and the
// Caddy glue (caddymodule/wshandler) wires it in.
package wsauth
