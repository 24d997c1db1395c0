package zenith

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// echoFields echoes, for the Error reply of a message the scanner refused
// for a member it would not take (a variant of an envelope name, a second
// envelope member, an envelope value of the wrong type), each of
// Controller, Topic and TransactionID that the whole message gives
// unambiguously: named exactly once, with a valid value, and with no
// other top-level name that a lenient parser could take for it (a
// variant in case or punctuation, an escaped spelling, a name outside
// printable ASCII, which Unicode case folding could match). A client
// that matches replies by TransactionID, as the original web client does,
// then gets its answer rather than waiting for its timeout; no value the
// scanner found ambiguous is ever echoed. Controller falls back to its
// default. When the message's syntax fails, the members read before the
// failure are judged alike.
func echoFields(msg []byte) Envelope {
	const echoed = HasController | HasTopic | HasTransactionID
	var env Envelope
	var exact, ambiguous Fields
	values := map[Fields][]byte{}
	s := getScanState(msg)
	defer s.release()
	d := &s.dec
	if tok, err := d.ReadToken(); err == nil && tok.Kind() == '{' {
		for d.PeekKind() != '}' {
			raw, err := d.ReadValue()
			if err != nil {
				break
			}
			name := raw[1 : len(raw)-1]
			escaped := bytes.IndexByte(name, '\\') >= 0
			if escaped {
				if s.name, err = jsontext.AppendUnquote(s.name[:0], raw); err != nil {
					break
				}
				name = s.name
			}
			v, err := d.ReadValue()
			if err != nil {
				break
			}
			switch f := exactField(name); {
			case !printableASCII(name):
				ambiguous |= echoed
			case f != 0 && !escaped:
				if exact&f != 0 {
					ambiguous |= f // a second one
				}
				exact |= f
				values[f] = v
			default:
				ambiguous |= foldedField(name)
			}
		}
	}
	for _, f := range []Fields{HasController, HasTopic, HasTransactionID} {
		if exact&f == 0 || ambiguous&f != 0 {
			continue
		}
		var one Envelope
		if setMember(&one, f, values[f], s.str, nil) != "" {
			continue // a value of the wrong type: nothing to echo
		}
		switch f {
		case HasController:
			env.Controller = one.Controller
		case HasTopic:
			env.Topic = one.Topic
		case HasTransactionID:
			env.TransactionID, env.TransactionIDText = one.TransactionID, one.TransactionIDText
		}
		env.Present |= f
	}
	if env.Present&HasController == 0 {
		env.Controller = DefaultController
	}
	return env
}

// exactField is the envelope member named exactly name, or 0.
func exactField(name []byte) Fields {
	for i, n := range envelopeNames {
		if string(name) == n {
			return 1 << i
		}
	}
	return 0
}

// foldedField is the envelope member whose name name folds to (ASCII
// letters and digits, ignoring case), or 0.
func foldedField(name []byte) Fields {
	var buf [maxFolded]byte
	folded, ok := foldName(buf[:0], name)
	if !ok {
		return 0
	}
	for i, n := range foldedNames {
		if string(folded) == n {
			return 1 << i
		}
	}
	return 0
}

func printableASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
