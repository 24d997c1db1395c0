package zenith

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// envelopeNames are the member names of the envelope, in the order of the
// Fields bits; folded are the same names as foldName gives them.
var (
	envelopeNames = [...]string{"Controller", "Topic", "Action", "TransactionID", "Confirm", "Data"}
	foldedNames   = [...]string{"CONTROLLER", "TOPIC", "ACTION", "TRANSACTIONID", "CONFIRM", "DATA"}
)

// maxFolded is the length of the longest folded envelope name: a longer
// folded name cannot be a variant of one.
const maxFolded = len("TRANSACTIONID")

// classify names the envelope member a raw (quoted) top-level name is, 0
// for another member, or gives the reason the name is refused.
func (s *scanState) classify(raw []byte) (Fields, string) {
	name := raw[1 : len(raw)-1]
	escaped := bytes.IndexByte(name, '\\') >= 0
	if escaped {
		var err error
		if s.name, err = jsontext.AppendUnquote(s.name[:0], raw); err != nil {
			return 0, "bad member name"
		}
		name = s.name
	}
	return classifyName(name, escaped)
}

// classifyName is classify of a name, decoded; escaped says it was
// written with an escape.
func classifyName(name []byte, escaped bool) (Fields, string) {
	for _, c := range name {
		if c < 0x20 || c > 0x7e {
			return 0, "member name not printable ASCII"
		}
	}
	for i, n := range envelopeNames {
		if string(name) == n {
			if escaped {
				return 0, "envelope member name spelled with an escape"
			}
			return 1 << i, ""
		}
	}
	var buf [maxFolded]byte
	if folded, ok := foldName(buf[:0], name); ok {
		for _, n := range foldedNames {
			if string(folded) == n {
				return 0, "variant of an envelope member name"
			}
		}
	}
	return 0, ""
}

// foldName appends name's ASCII letters, upper-cased, and digits to dst,
// dropping everything else: what the most lenient parsers compare (Go's
// encoding/json/v2 ignores case, '_' and '-'). ok is false when the result
// is longer than any folded envelope name.
func foldName(dst, name []byte) (folded []byte, ok bool) {
	for _, c := range name {
		c, kept := foldByte(c)
		if !kept {
			continue
		}
		if len(dst) == maxFolded {
			return dst, false
		}
		dst = append(dst, c)
	}
	return dst, true
}

// foldByte is what a lenient parser compares of c: an ASCII letter
// upper-cased, a digit as it is; kept is false for anything else, which
// such parsers ignore.
func foldByte(c byte) (folded byte, kept bool) {
	switch {
	case 'a' <= c && c <= 'z':
		return c - ('a' - 'A'), true
	case 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return c, true
	}
	return 0, false
}

// str decodes v, a valid JSON string, giving the common controller and
// action names without an allocation. An escaped string is decoded in the
// scratch buffer, grown at once to len(v) (decoding never lengthens).
func (s *scanState) str(v []byte) string {
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') >= 0 {
		if cap(s.name) < len(v) {
			s.name = make([]byte, 0, len(v))
		}
		var err error
		if s.name, err = jsontext.AppendUnquote(s.name[:0], v); err == nil {
			body = s.name
		}
	}
	return internName(body)
}

// plainStr is str of a string without escapes.
func plainStr(v []byte) string { return internName(v[1 : len(v)-1]) }

// internName is body as a string, the common controller and action names
// without an allocation.
func internName(body []byte) string {
	switch string(body) {
	case "Zenith":
		return "Zenith"
	case "Auth":
		return "Auth"
	case "Market":
		return "Market"
	case "News":
		return "News"
	case "Trading":
		return "Trading"
	case "Watchlist":
		return "Watchlist"
	case "Notify":
		return "Notify"
	case "Channel":
		return "Channel"
	case "Fragments":
		return "Fragments"
	case ActionPublish:
		return ActionPublish
	case ActionSub:
		return ActionSub
	case ActionUnsub:
		return ActionUnsub
	}
	return string(body)
}
