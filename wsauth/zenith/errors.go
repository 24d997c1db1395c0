package zenith

import (
	"errors"
	"strconv"
)

// Sentinel errors, compared with errors.Is. Each tells the caller what to
// answer; none carries message content.
var (
	// ErrMalformed: the message is not an envelope the gateway accepts.
	// The caller answers with an Error message, Data "Data.Deserialise"
	// (CodeDeserialise), and keeps the socket open.
	ErrMalformed = errors.New("malformed message")

	// ErrInvalidUTF8: the text frame is not valid UTF-8. The caller closes
	// the socket with 1007 (RFC 6455 §7.4.1).
	ErrInvalidUTF8 = errors.New("message is not valid UTF-8")

	// ErrTokenTooLarge: an AuthToken request's AccessToken is over the
	// token bound. The caller answers Reject.
	ErrTokenTooLarge = errors.New("access token too large")
)

// ScanError is a refused message or AuthToken Data. Reason and Offset are
// safe to log: they are the scanner's own words and a byte position, never
// message content (a message may carry a token). Echo holds what the
// caller may copy into its Error reply.
type ScanError struct {
	// Err is ErrMalformed or ErrInvalidUTF8 (from Scan), or ErrMalformed
	// or ErrTokenTooLarge (from ParseAuthToken).
	Err error
	// Reason says what was wrong, in the scanner's fixed vocabulary.
	Reason string
	// Offset is the byte offset at or after which the fault was found.
	Offset int64
	// Echo holds the envelope members read, each valid, before the fault
	// (Controller after its default), for the Error reply only: the
	// message as a whole was refused, so nothing may be authorized or
	// forwarded from it. Its Data is always nil.
	Echo Envelope
}

func (e *ScanError) Error() string {
	return e.Err.Error() + ": " + e.Reason + " at byte " + strconv.FormatInt(e.Offset, 10)
}

func (e *ScanError) Unwrap() error { return e.Err }
