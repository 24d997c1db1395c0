package audit

import (
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Sink writes records. The Writer calls it from one flush at a time, in
// chain order; an error means the record is not written.
type Sink interface {
	WriteRecord(r *Record) error
}

// BatchSink is a Sink that also writes several records with one write:
// one line (a batch line, MarshalBatchLine) or nothing, so that a failed
// write leaves none of them in the file. The Writer hands it the records
// that concurrent Appends queued while the previous write was under way;
// a plain Sink gets one record per write.
type BatchSink interface {
	Sink
	// WriteRecords writes rs (two or more, in chain order) as one batch
	// line; an error means none of them is written.
	WriteRecords(rs []*Record) error
}

// Syncer is a Sink that can flush what it wrote to stable storage. The
// Writer syncs before it hands a checkpoint to OnCheckpoint, so that the
// store never holds a checkpoint whose line a power loss could take back.
type Syncer interface {
	Sync() error
}

// LineSink writes each record as one JSON object and a line break
// (MarshalLine), and a batch as one batch line (MarshalBatchLine), with
// one Write call.
type LineSink struct {
	W io.Writer
}

// WriteRecord implements Sink.
func (s LineSink) WriteRecord(r *Record) error {
	_, err := s.W.Write(append(MarshalLine(r), '\n'))
	return err
}

// WriteRecords implements BatchSink.
func (s LineSink) WriteRecords(rs []*Record) error {
	_, err := s.W.Write(append(MarshalBatchLine(rs), '\n'))
	return err
}

// ZapSink writes each record as one entry of a zap core (Caddy's logging),
// its members inline after the encoder's envelope (Envelope), and a batch
// as one entry whose member records holds the records. It writes through
// Core.Write, so the core's level and sampling never drop a record, and
// its error reaches the writer. The core must encode JSON.
type ZapSink struct {
	Core zapcore.Core
	// LoggerName is the entry's logger name.
	LoggerName string
}

// The messages of the two forms of line: they are in the envelope, which
// the reader skips, so they are for a reader of the log, not for verify.
const (
	msgRecord  = "audit record"
	msgRecords = "audit records"
)

// WriteRecord implements Sink.
func (s ZapSink) WriteRecord(r *Record) error {
	ent := zapcore.Entry{Level: zapcore.InfoLevel, Time: r.Time, LoggerName: s.LoggerName, Message: msgRecord}
	return s.Core.Write(ent, []zapcore.Field{zap.Inline(r)})
}

// WriteRecords implements BatchSink: one entry, stamped with the last
// record's time.
func (s ZapSink) WriteRecords(rs []*Record) error {
	ent := zapcore.Entry{Level: zapcore.InfoLevel, Time: rs[len(rs)-1].Time, LoggerName: s.LoggerName, Message: msgRecords}
	return s.Core.Write(ent, []zapcore.Field{zap.Array(batchMember, recordsArray(rs))})
}

// Sync implements Syncer: Caddy's file writer syncs the file.
func (s ZapSink) Sync() error { return s.Core.Sync() }

type recordsArray []*Record

func (rs recordsArray) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	for _, r := range rs {
		if err := enc.AppendObject(r); err != nil {
			return err
		}
	}
	return nil
}

var (
	_ BatchSink = LineSink{}
	_ BatchSink = ZapSink{}
	_ Syncer    = ZapSink{}
)
