package audit

import (
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Sink writes records. The Writer calls it with its lock held, one record
// at a time, in chain order; an error means the record is not written.
type Sink interface {
	WriteRecord(r *Record) error
}

// LineSink writes each record as one JSON object and a line break
// (MarshalLine) with one Write call.
type LineSink struct {
	W io.Writer
}

// WriteRecord implements Sink.
func (s LineSink) WriteRecord(r *Record) error {
	_, err := s.W.Write(append(MarshalLine(r), '\n'))
	return err
}

// ZapSink writes each record as one entry of a zap core (Caddy's logging),
// its members inline after the encoder's envelope (Envelope). It writes
// through Core.Write, so the core's level and sampling never drop a
// record, and its error reaches the writer. The core must encode JSON.
type ZapSink struct {
	Core zapcore.Core
	// LoggerName is the entry's logger name.
	LoggerName string
}

// WriteRecord implements Sink.
func (s ZapSink) WriteRecord(r *Record) error {
	ent := zapcore.Entry{Level: zapcore.InfoLevel, Time: r.Time, LoggerName: s.LoggerName, Message: "audit record"}
	return s.Core.Write(ent, []zapcore.Field{zap.Inline(r)})
}
