// Package zenith is the Zenith message protocol's vocabulary, as the
// message-service gateway (package wsauth) reads and writes it:
//
//	envelope.go      Scan, the strict reader of client->backend messages,
//	                 and Envelope, what it reports
//	scan.go          Scan's reading with the decoder, for what the fast
//	                 path does not take: members, nesting, integers
//	names.go         the envelope's member names and the variants refused,
//	                 and the common controller and action names interned
//	envelope_fast.go the common message read in one pass, to the same result
//	echo.go          what the Error reply of a refused message may echo
//	decoder.go       the pooled jsontext decoder and its error wording
//	errors.go        ScanError and the sentinel errors
//	messages.go      the gateway's own messages (Error, the Identify
//	                 reply, Unsub), Identify and Profile
//	authtoken.go     an AuthToken message's Data
//	owner.go         an AuthOwner message's Data, and any Data of strings
//	time.go          the Zenith DateTime and TimeSpan
//
// It is pure: no socket, no clock, no state between calls. Scan,
// ScanReusing, the Append functions, ParseAuthToken, ParseAuthOwner and
// ParseStrings are safe for concurrent use; an Envelope aliases the
// message it was scanned from and belongs to the goroutine that scanned
// it (the connection's reader).
//
// This package is a leaf: it imports the standard library and
// github.com/go-json-experiment/json/jsontext, nothing else (a test in
// wsauth, deps_test.go, fails if it does).
package zenith
