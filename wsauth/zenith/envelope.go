package zenith

import (
	"bytes"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Actions of the Zenith envelope (docs/protocol.md, "Message container").
const (
	ActionPublish = "Publish"
	ActionSub     = "Sub"
	ActionUnsub   = "Unsub"
	ActionCancel  = "Cancel"
	ActionError   = "Error"
)

// The Zenith defaults for a member the message leaves out. Scan applies
// them, so the policy sees what the backend will act on.
const (
	DefaultController = "Zenith"
	DefaultAction     = ActionPublish
)

// Controllers are the protocol's controllers (docs/protocol.md, "Message
// container"). The gateway's metrics count these by name and every other
// controller as "other", so a client cannot grow the label set.
var Controllers = [...]string{"Zenith", "Auth", "Market", "News", "Trading", "Watchlist", "Notify", "Channel", "Fragments"}

// Fields is a set of envelope members, as found in a message.
type Fields uint8

// The envelope members.
const (
	HasController Fields = 1 << iota
	HasTopic
	HasAction
	HasTransactionID
	HasConfirm
	HasData
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

// Envelope is one client->backend message as Scan read it. Its byte slices
// alias the scanned message: the caller keeps that message unchanged while
// it uses them.
type Envelope struct {
	// Controller is the handling area, "Zenith" when the message has none.
	Controller string
	// Topic is the operation or subscription, with any "!" arguments; ""
	// when the message has none.
	Topic string
	// Action is one of the Action constants, "Publish" when the message
	// has none.
	Action string
	// TransactionID is the client's integer, 0 when the message has none.
	TransactionID int64
	// TransactionIDText is the exact JSON text of TransactionID, for the
	// echo in replies; nil when the message has none.
	TransactionIDText []byte
	// Confirm is the message's Confirm, false when it has none.
	Confirm bool
	// Data is the raw JSON value of Data, exactly as sent and not decoded
	// (its syntax and UTF-8 checked); nil when the message has none.
	Data []byte
	// Present says which envelope members the message carried.
	Present Fields
}

// TopicBase is the envelope's topic before any "!" argument: what the
// policy matches.
func (e *Envelope) TopicBase() string { return TopicBase(e.Topic) }

// TopicBase is topic before its first "!" ("Security!BHP.ASX" gives
// "Security"), or all of it when it has none.
func TopicBase(topic string) string {
	base, _, _ := strings.Cut(topic, "!")
	return base
}

// Scan reads msg, the payload of one client text frame, as a Zenith
// envelope, strictly: whatever JSON parser the backend uses (case
// sensitive or not, first or last duplicate wins, decoding escapes in
// names or not) sees exactly the Controller, Topic and Action Scan
// reports. msg must be:
//
//   - valid UTF-8, else the error wraps ErrInvalidUTF8 (close 1007);
//   - one JSON object (RFC 8259, with no escaped lone surrogates and
//     nesting no deeper than MaxDepth) with only whitespace around it;
//   - top-level member names in printable ASCII;
//   - no envelope member (Controller, Topic, Action, TransactionID,
//     Confirm, Data) twice, in any spelling: a name whose ASCII letters and
//     digits match one of them ignoring case ("controller", "CONTROLLER",
//     "Control_ler") is refused, and so is an envelope name spelled with an
//     escape ("Contr\u006fller" is Controller once decoded, but a parser
//     that does not decode names would miss it), so the envelope names
//     left are exact and counted once;
//   - Controller, Topic and Action strings, Action one of the Action
//     constants exactly; TransactionID an integer within
//     ±MaxTransactionID, with no fraction or exponent; Confirm a boolean.
//     Data may be any value.
//
// Otherwise the error is a *ScanError wrapping ErrMalformed. Other members
// and Data are checked for syntax and UTF-8 only: duplicate names there are
// the backend's business (only the backend reads them), and finding them
// would cost memory out of proportion (see strict). Scan applies
// the Zenith defaults (DefaultController, DefaultAction). It never copies
// msg: Data and TransactionIDText alias it. Beyond msg it allocates the
// decoded Controller and Topic and, for an escaped one, a transient buffer
// as long as its JSON text: memory does not grow with the rest of the
// message (its names, nesting or Data). A size limit is the caller's.
// Scan is safe for concurrent use. The common message (ASCII, no escape)
// is read without the decoder (scanFast), to the same result.
func Scan(msg []byte) (Envelope, error) { return ScanReusing(msg, nil) }

// ScanReusing is Scan; when topic is not nil, a Topic equal to *topic is
// *topic, without a new string, and *topic becomes the Topic read (a
// session reads the same topics again and again). *topic is read and
// written without a lock: it belongs to the goroutine that scans.
func ScanReusing(msg []byte, topic *string) (Envelope, error) {
	if env, ok := scanFast(msg, topic); ok {
		return env, nil
	}
	return scanDecoder(msg)
}

// MaxDepth bounds a message's nesting, the envelope object's being 1:
// the default of System.Text.Json and Newtonsoft.Json (MaxDepth 64), which
// refuse a deeper message whole. The gateway refuses what the backend
// would: a message the backend drops while the gateway acts on it (an
// Unsub it tracks) would part the two.
const MaxDepth = 64

// MaxTransactionID bounds a client's TransactionID either way: 2^53 - 1,
// the largest integer a double holds exactly (the web client's numbers
// are doubles, as a backend in JavaScript reads them). A backend that
// rounds a larger one could echo it into the reserved range, where the
// gateway drops it as the answer to its own message.
const MaxTransactionID = 1<<53 - 1

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
		switch {
		case 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		case 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			continue
		}
		if len(dst) == maxFolded {
			return dst, false
		}
		dst = append(dst, c)
	}
	return dst, true
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
