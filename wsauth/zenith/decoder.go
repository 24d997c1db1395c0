package zenith

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// scanState is a pooled decoder with its input and a scratch buffer for
// escaped names.
type scanState struct {
	in   bytes.Buffer
	dec  jsontext.Decoder
	name []byte
}

var scanStates = sync.Pool{New: func() any { return new(scanState) }}

// getScanState gives a pooled decoder reading msg in place (a
// bytes.Buffer input is not copied).
func getScanState(msg []byte) *scanState {
	s := scanStates.Get().(*scanState)
	s.in = *bytes.NewBuffer(msg)
	s.dec.Reset(&s.in, strict...)
	return s
}

// release drops the decoder's hold on the message, and a scratch buffer
// grown for a long escaped string, and pools the state.
func (s *scanState) release() {
	s.in = bytes.Buffer{}
	s.dec.Reset(&s.in, strict...)
	if cap(s.name) > 4<<10 {
		s.name = nil
	}
	scanStates.Put(s)
}

// strict are the decoder's options: invalid UTF-8, including escaped lone
// surrogates, is refused; duplicate names are left to Scan, which refuses
// a second envelope member itself. Asking the decoder to refuse every
// duplicate, at every depth, makes it keep every name of an object past 64
// in a map: up to 16 times the message in memory and one allocation per
// name (1 MiB of short names in Data: 16 MB, 112,000 allocations), against
// a few hundred bytes without.
var strict = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(false)}

func (s *scanState) fault(reason string) *ScanError {
	return &ScanError{Err: ErrMalformed, Reason: reason, Offset: s.dec.InputOffset()}
}

// syntaxError words a decoder error without its text, which quotes the
// message.
func (s *scanState) syntaxError(err error) *ScanError {
	e := &ScanError{Err: ErrMalformed, Reason: "syntax error", Offset: s.dec.InputOffset()}
	if se, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		e.Offset = se.ByteOffset
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		e.Reason = "truncated"
	}
	return e
}
