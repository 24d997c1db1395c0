// Package wsauth is the message-service gateway's core: what sits between a
// client's WebSocket and the backend's. It reads and writes the Zenith
// messages with package zenith (the envelope scanner, the gateway's own
// messages, the Auth messages' Data) and asks package policy who may send
// what (the Controller/Topic -> scope table, the entitlement limits). The
// sockets, on top of them:
//
//	config.go         Config and its groups Auth and Live, the Default*
//	                  limits, Validate (each group's, and what spans groups)
//	config_legs.go    Config's groups of the two legs: Backend and Transport
//	hooks.go          what the Caddy glue fills in: Hooks (Verifier,
//	                  PasswordChecker, Metrics, ...), Identity
//	gateway.go        Gateway (New, ServeHTTP, Shutdown): the upgrade, the
//	                  live sessions, the hijack adapter
//	reconfigure.go    Reconfigure: a new configuration put in force on a
//	                  live Gateway, its sessions refitted to it
//	drain.go          Drain: the sessions closed spread over a window
//	admit.go          what an upgrade request must pass before the 101:
//	                  its checks, header auth, the unauthenticated places
//	                  and the sessions of each user
//	xconnect.go       an extended CONNECT (HTTP/2, HTTP/3) as an upgrade
//	session.go        one socket: its components and who owns each (and
//	                  clientConn, the client's socket, and lifetime, the
//	                  session's context and end), its run, each client
//	                  message authorized and forwarded, replies
//	clientread.go     clientReader, the client reader's state; the read
//	                  loop, the message bound, the read deadline
//	auth.go           the Auth messages, answered by the gateway
//	authcode.go       AuthCode: an authorization code exchanged
//	live.go           authority, a session's identity and backend leg, and
//	                  what the identity allows over time: the lapse
//	                  (expiry, revocation), re-authentication (resubscribe,
//	                  scope shrink), the Identify subscription, pushes
//	subs.go           subscriptions, the client's subscriptions as the
//	                  gateway tracks them; the forward under the session's
//	                  lock, reserved TransactionIDs
//	supervise.go      the gateway's supervisor: expiry, token rechecks,
//	                  grace
//	limits.go         Limits, Config's group of the entitlement limits;
//	                  the limits enforced (subscriptions, message rate)
//	                  and require_tls's withheld scopes
//	relay.go          the backend leg's dial with failover; who writes the
//	                  send queue to the client, and when; the client writer
//	queue.go          sendQueue, the client's bounded send queue
//	compress.go       permessage-deflate to the client: which messages are
//	                  compressed (compressRule), never one carrying a token
//	passthrough.go    the backend's compressed messages (Backend.Compression):
//	                  the backend leg's answer checked, each message
//	                  decompressed within the bound and checked, passed
//	                  on to the client as it came where that is sound
//	ping.go           clientPings, the pings the client has not answered
//	backendread.go    backendReader, the backend reader's state; its loop
//	                  through gorilla, its batch, the message buffers
//	backendframes.go  the backend reader on a TCP leg: the frames read from
//	                  the leg's buffer, control frames answered as gorilla
//	                  does
//	closing.go        closer, a session's close state; the close handshake,
//	                  the lingering close and the session's teardown
//	closecodes.go     what a backend's close code means to the client
//	audit.go          Auditor, the audit records of a socket's events
//	                  (authentications, lapses, subscriptions' starts and
//	                  ends, denials, orders), never per relayed message
//	trace.go          a socket's spans, when its upgrade is traced: the
//	                  upgrade and authentication, then re-authentications,
//	                  lapses and the close, each linked to the upgrade's
//
// Goroutines: a Gateway is safe for concurrent use; each socket
// has a client reader (a goroutine ServeHTTP starts before it returns; it
// also writes the backend leg), a client writer and, once authenticated,
// a backend reader (which also writes the client, when it can); one
// supervisor per Gateway walks the authenticated sessions.
// The session type says which goroutine owns which of its components and
// what its lock guards: the client reader's clientReader, the
// authority and subscriptions it shares with the supervisor under the
// session's mu, the sendQueue with a lock of its own, the backend
// reader's backendReader, the closer any goroutine may close with, the
// clientPings the client writer and the client reader share, and the
// clientConn and lifetime set once and used by all of them.
// Each component's type says what it holds.
//
// The RFC 6455 framing the session does itself, under gorilla's Conn, is
// package internal/wsframe: frame headers, masking, the verbatim runs of
// the backend's frames, and the connection under each leg's gorilla Conn
// (the session's batched data frames, its hooks around each read), the
// backend leg's dialer, and an extended CONNECT's stream as a net.Conn.
//
// This package must not depend on Caddy (a test in caddymodule fails if it
// does) nor on the identity server: it takes plain config structs, and the
// Caddy glue (caddymodule/wshandler) wires it in. Of OpenTelemetry it
// imports the tracing API only, never the SDK. Of its own subpackages it
// imports zenith, policy and wsframe; neither zenith nor policy imports
// it, gorilla or zap, and wsframe imports nothing of it (deps_test.go
// holds the table and fails on any import outside it).
package wsauth
