// Package audit is the tamper-evident audit: records chained by hash, one
// writer that sequences them, signed checkpoints, and the verifier that
// names the first bad record of a chain (docs/audit.md).
//
// It is pure: it imports no gatehouse package but internal/contain (the
// delayed flush's goroutine is contained as every other): not the Caddy
// glue, identity, the message gateway or the query service; besides, only
// the standard library, zap (a sink may be a zap core), golang-jwt (the
// checkpoint algorithms) and go-json-experiment (strict JSON). The glue gives it a
// sink on Caddy's logging and a signer over a sealed store key.
//
// # Records
//
// A record has instance, run, seq, prev, hash, time, kind and attrs; a
// checkpoint has a jws besides. A run is one process's chain: seq 1 is a
// run_start, each record's prev is its predecessor's hash, and a run's
// first record's prev is the hash of the previous run's last checkpoint
// (32 zero bytes for an instance's first run), whose run and seq its
// attributes prev_run and prev_seq name. Attributes are typed: a string,
// a signed 64-bit integer, a boolean or a list of strings; keys are 1 to
// 64 of a-z, 0-9 and _, and the writer refuses keys that name credentials.
// The verifier accepts any key and any kind: the schema grows by adding.
//
// # Canonical encoding
//
// The hash is SHA-256(prev ‖ C), prev the 32 bytes of the previous hash
// and C the canonical encoding of the record's other hashed fields. C is
// length-prefixed, not JSON: no escapes, no number formatting, no key
// order of an encoder to agree on, so that any encoder's line (ours,
// zap's) decodes to the same C, and the hash is independent of the log
// encoder. An integer is big-endian two's complement; str(s) is the byte
// length of s as 4 bytes big-endian, then the bytes of s (UTF-8).
//
//	str("gatehouse-audit/1")     the format and its version
//	str(instance)
//	str(run)
//	seq                          8 bytes, unsigned
//	str(time)                    TimeLayout, UTC, nine fractional digits
//	str(kind)
//	n                            4 bytes: the number of attributes
//	n times, by key in byte order (keys unique):
//	  str(key)
//	  type                       1 byte: 's', 'i', 'b' or 'l'
//	  's': str(value)
//	  'i': value                 8 bytes, signed
//	  'b': value                 1 byte, 0 or 1
//	  'l': count (4 bytes), then str(item) for each item in order
//
// The hash and the jws are not in C (the jws signs the hash). Every field
// has one spelling in a line, which ParseLine holds lines to: a hash is 64
// lower-case hex digits, seq and integers are shortest decimal, the time
// is TimeLayout. JSON escapes in strings are the encoder's business: the
// hash is over the decoded values.
//
// RFC 8785 (JSON canonicalization) was the alternative: it hashes JSON an
// encoder could emit as it is, but its numbers are IEEE doubles (seq and
// row counts past 2^53 would round) and its key order is by UTF-16 code
// units; a length-prefixed form is a page of code in any language and has
// nothing to get wrong.
//
// # Lines
//
// A record line is one JSON object: instance, run, seq, prev (hex), hash
// (hex), time, kind, attrs (an object; a list is an array of strings) and,
// for checkpoints, jws. A log encoder's envelope members (Envelope: level,
// ts, logger, msg) are skipped and unprotected; any other member is
// malformed. A batch line (MarshalBatchLine; ZapSink writes it with msg
// "audit records") holds several records written with one write: besides
// the envelope, only records, a non-empty array of objects with exactly a
// record line's members. ParseLine reads a record line, ParseRecords
// either; a record's place is its line and, in a batch line, its index
// (Position.Index, from 1). The message is not checked: it is the
// envelope's, which nothing protects.
//
// # Checkpoints
//
// A checkpoint is a record of kind checkpoint whose jws is a compact JWS
// with header typ gatehouse-audit+jwt (CheckpointType) and the audit key's
// kid, signing {instance, run, seq, hash, time} of the checkpoint record
// itself, and final: true at Close. The writer writes one when the
// interval has passed (on Append, or RunCheckpoints' tick) and one at
// Close; each goes to OnCheckpoint for the store, after a sink that can
// sync (Syncer) has synced it.
//
// # Group commit
//
// Append queues its record (its time taken in queue order). A caller that
// finds no leader leads: it writes the queue (bounded) with one sink
// write, a batch line when there are several (BatchSink), and hands the
// lead to the first record queued meanwhile; the others wait until their
// record's write is settled. No delay is added: a record that finds no
// write under way is written alone. Append returns after its record is written,
// so a crash loses only records no caller was told are written; with a
// FlushDelay it returns once the record is queued, and a flush the delay
// later writes the queue (delay.go): the records of a busy moment share
// one write, and a crash loses those not yet written. A write
// that fails leaves none of its records in the chain: each caller gets
// ErrWrite, and a loss record counts them in the next write.
//
// # Verification
//
// Verify reads files (rolled files of a chain in order, several runs and
// instances) and reports, for each run, the first bad record and what
// happened to it (ProblemKind): edited, inserted, removed, reordered,
// a forged checkpoint, a missing run. Records after a run's last
// checkpoint are listed as unprotected, and a line a crash cut short as a
// cut. The store's checkpoints (VerifyOptions.Expected) catch a tail or a
// run removed whole.
//
// # Usage
//
// Usage computes the usage report per user × venue × feed over UTC days
// from the records of verified chains: days entitled (from entitlement
// snapshots and changes, each giving its subject's whole set), days used,
// peak concurrent subscriptions across instances and runs,
// subscription-minutes, queries and rows read. A subscription whose run
// ended without its end ends at the run's last record. The rules are in
// docs/audit.md, "The usage report".
package audit
