package audit

import "errors"

// Sentinel errors, compared with errors.Is.
var (
	// ErrMalformed: a line is not a record (ParseLine).
	ErrMalformed = errors.New("audit: malformed record")
	// ErrAttr: an attribute the writer refuses (a bad or credential key,
	// a key given twice, too many).
	ErrAttr = errors.New("audit: attribute refused")
	// ErrClosed: the writer is closed.
	ErrClosed = errors.New("audit: writer closed")
	// ErrWrite: the sink failed to write a record; the record is lost and
	// counted, and the chain goes on from the last record written.
	ErrWrite = errors.New("audit: write failed")
	// ErrCheckpoint: a checkpoint's JWS does not verify.
	ErrCheckpoint = errors.New("audit: checkpoint refused")
	// ErrNoSnapshot: a usage range whose first day has no entitlement
	// snapshot on it or before it (Usage).
	ErrNoSnapshot = errors.New("audit: no entitlement snapshot")
)
