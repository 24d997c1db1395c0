package zenith

import (
	"io"
	"math"
	"unicode/utf8"
)

// scanDecoder is Scan with the decoder, for every message scanFast does
// not take.
func scanDecoder(msg []byte) (Envelope, error) {
	var env Envelope
	if !utf8.Valid(msg) {
		off := 0
		for off < len(msg) {
			r, n := utf8.DecodeRune(msg[off:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			off += n
		}
		return env, &ScanError{Err: ErrInvalidUTF8, Reason: "invalid UTF-8", Offset: int64(off)}
	}
	s := getScanState(msg)
	defer s.release()
	err := s.scan(msg, &env)
	if err == nil {
		if off := tooDeep(msg); off >= 0 {
			err = &ScanError{Err: ErrMalformed, Reason: "nested deeper than 64", Offset: int64(off)}
		}
	}
	if env.Present&HasController == 0 {
		env.Controller = DefaultController
	}
	if env.Present&HasAction == 0 {
		env.Action = DefaultAction
	}
	if err != nil {
		if err.Reason == "syntax error" || err.Reason == "truncated" || err.Reason == "nested deeper than 64" {
			// What was read is all there is (or, too deep, the whole
			// envelope, read without a fault).
			err.Echo = env
			err.Echo.Data = nil
			err.Echo.Present &^= HasData
		} else {
			err.Echo = echoFields(msg)
		}
		return Envelope{}, err
	}
	return env, nil
}

func (s *scanState) scan(msg []byte, env *Envelope) *ScanError {
	d := &s.dec
	tok, err := d.ReadToken()
	if err != nil {
		return s.syntaxError(err)
	}
	if tok.Kind() != '{' {
		return s.fault("not a JSON object")
	}
	for d.PeekKind() != '}' {
		raw, err := d.ReadValue() // the member name
		if err != nil {
			return s.syntaxError(err)
		}
		field, reason := s.classify(raw)
		if reason != "" {
			return s.fault(reason)
		}
		v, err := d.ReadValue()
		if err != nil {
			return s.syntaxError(err)
		}
		if field == 0 {
			continue
		}
		if env.Present&field != 0 {
			return s.fault("duplicate envelope member")
		}
		end := d.InputOffset()
		start := end - int64(len(v))
		if reason := s.member(env, field, msg[start:end:end]); reason != "" {
			return s.fault(reason)
		}
		env.Present |= field
	}
	if _, err := d.ReadToken(); err != nil { // the '}'
		return s.syntaxError(err)
	}
	if _, err := d.ReadToken(); err != io.EOF {
		if err == nil {
			return s.fault("data after the object")
		}
		return s.syntaxError(err)
	}
	return nil
}

// member stores the value v of envelope member field in env, or gives the
// reason it is refused.
func (s *scanState) member(env *Envelope, field Fields, v []byte) string {
	return setMember(env, field, v, s.str, nil)
}

// setMember is member, with str decoding a string value; when topic is
// not nil, a Topic equal to *topic is *topic (no new string), and *topic
// becomes the Topic read. topic is for strings without escapes only.
func setMember(env *Envelope, field Fields, v []byte, str func([]byte) string, topic *string) string {
	switch field {
	case HasController:
		if v[0] != '"' {
			return "Controller not a string"
		}
		env.Controller = str(v)
	case HasTopic:
		if v[0] != '"' {
			return "Topic not a string"
		}
		switch {
		case topic == nil:
			env.Topic = str(v)
		case string(v[1:len(v)-1]) == *topic:
			env.Topic = *topic
		default:
			env.Topic = str(v)
			*topic = env.Topic
		}
	case HasAction:
		if v[0] != '"' {
			return "Action not a string"
		}
		switch a := str(v); a {
		case ActionPublish, ActionSub, ActionUnsub, ActionCancel, ActionError:
			env.Action = a
		default:
			return "unknown Action"
		}
	case HasTransactionID:
		n, ok := parseInt64(v)
		if !ok || n > MaxTransactionID || n < -MaxTransactionID {
			return "TransactionID not an integer in range"
		}
		env.TransactionID, env.TransactionIDText = n, v
	case HasConfirm:
		switch v[0] {
		case 't':
			env.Confirm = true
		case 'f':
			env.Confirm = false
		default:
			return "Confirm not a boolean"
		}
	case HasData:
		env.Data = v
	}
	return ""
}

// tooDeep is the offset of the bracket that nests msg deeper than
// MaxDepth, or -1. Brackets in strings do not count; the syntax is the
// decoder's to check.
func tooDeep(msg []byte) int {
	depth, inString := 0, false
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		switch {
		case inString:
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > MaxDepth {
				return i
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return -1
}

// parseInt64 reads v, a valid JSON number, as an integer: no fraction, no
// exponent, within int64.
func parseInt64(v []byte) (int64, bool) {
	neg := v[0] == '-'
	if neg {
		v = v[1:]
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	var n uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (limit-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		return int64(-n), true // -(1<<63) wraps to itself, as it should
	}
	return int64(n), true
}
