package audit

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/zap/zapcore"
)

// Envelope are the members a log encoder adds around a record (zap's and
// so Caddy's): ParseLine skips them. They are outside the chain: nothing
// protects them.
var Envelope = []string{"level", "ts", "logger", "msg"}

// MarshalLine returns r as one JSON object, without a line break: the
// members in the order instance, run, seq, prev, hash, time, kind, attrs,
// and jws when r has one.
func MarshalLine(r *Record) []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"instance":`...)
	b = appendQuote(b, r.Instance)
	b = append(b, `,"run":`...)
	b = appendQuote(b, r.Run)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `,"prev":"`...)
	b = hex.AppendEncode(b, r.Prev[:])
	b = append(b, `","hash":"`...)
	b = hex.AppendEncode(b, r.Hash[:])
	b = append(b, `","time":"`...)
	b = r.Time.UTC().AppendFormat(b, TimeLayout)
	b = append(b, `","kind":`...)
	b = appendQuote(b, string(r.Kind))
	b = append(b, `,"attrs":{`...)
	for i, a := range r.Attrs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQuote(b, a.Key)
		b = append(b, ':')
		b = appendValue(b, a.Value)
	}
	b = append(b, '}')
	if r.JWS != "" {
		b = append(b, `,"jws":`...)
		b = appendQuote(b, r.JWS)
	}
	return append(b, '}')
}

func appendValue(b []byte, v Value) []byte {
	switch v.kind() {
	case typeInt:
		return strconv.AppendInt(b, v.n, 10)
	case typeBool:
		return strconv.AppendBool(b, v.n == 1)
	case typeStrings:
		b = append(b, '[')
		for i, s := range v.list {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendQuote(b, s)
		}
		return append(b, ']')
	}
	return appendQuote(b, v.s)
}

// appendQuote quotes s as a JSON string; invalid UTF-8 becomes U+FFFD,
// as in every log encoder (the writer has replaced it before hashing).
func appendQuote(b []byte, s string) []byte {
	out, err := jsontext.AppendQuote(b, validUTF8(s))
	if err != nil { // unreachable: the input is valid UTF-8
		panic(err)
	}
	return out
}

// members are a line's members besides the envelope's; jws is only a
// checkpoint's.
var members = []string{"instance", "run", "seq", "prev", "hash", "time", "kind", "attrs", "jws"}

// ParseLine reads one record line (without its line break) as a record.
// It is strict where a lenient reader would let one record have two
// spellings that a verifier might disagree on: member names exact and
// unique, UTF-8 valid, hashes in lower-case hex, seq and integers in
// their shortest decimal form, the time in TimeLayout. It does not check
// the hash. A batch line is not a record line: ParseRecords reads both.
func ParseLine(line []byte) (*Record, error) {
	var m map[string]jsontext.Value // v2: names exact, a name given twice refused
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return parseRecord(m, true)
}

// parseRecord reads a record's members from m: those of a record line,
// where the envelope's are skipped, or those of a batch line's record
// object, where there is no envelope.
func parseRecord(m map[string]jsontext.Value, envelope bool) (*Record, error) {
	for k := range m {
		if !slices.Contains(members, k) && !(envelope && slices.Contains(Envelope, k)) {
			return nil, fmt.Errorf("%w: unknown member %.32q", ErrMalformed, k)
		}
	}
	bad := false // a string member is missing or not a string
	str := func(name string) string {
		var s string
		if v, ok := m[name]; !ok || v.Kind() != '"' || json.Unmarshal(v, &s) != nil {
			bad = true
		}
		return s
	}
	r := &Record{Instance: str("instance"), Run: str("run"), Kind: Kind(str("kind"))}
	prev, hash, tm := str("prev"), str("hash"), str("time")
	if bad {
		return nil, fmt.Errorf("%w: a member is missing or not a string", ErrMalformed)
	}
	seq := m["seq"]
	var err error
	if r.Seq, err = strconv.ParseUint(string(seq), 10, 64); err != nil || strconv.FormatUint(r.Seq, 10) != string(seq) {
		return nil, fmt.Errorf("%w: seq %.24s", ErrMalformed, seq)
	}
	if r.Prev, err = parseHash(prev); err != nil {
		return nil, fmt.Errorf("%w: prev: %v", ErrMalformed, err)
	}
	if r.Hash, err = parseHash(hash); err != nil {
		return nil, fmt.Errorf("%w: hash: %v", ErrMalformed, err)
	}
	if r.Time, err = time.Parse(TimeLayout, tm); err != nil || r.Time.Format(TimeLayout) != tm {
		return nil, fmt.Errorf("%w: time %.40q", ErrMalformed, tm)
	}
	var attrs map[string]jsontext.Value
	if raw := m["attrs"]; raw.Kind() != '{' || json.Unmarshal(raw, &attrs) != nil {
		return nil, fmt.Errorf("%w: attrs is missing or not an object", ErrMalformed)
	}
	if len(attrs) > MaxAttrs {
		return nil, fmt.Errorf("%w: %d attributes", ErrMalformed, len(attrs))
	}
	for k, raw := range attrs {
		v, err := parseValue(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: attribute %.64q: %v", ErrMalformed, k, err)
		}
		r.Attrs = append(r.Attrs, Attr{k, v})
	}
	// Keys are unique: the decoder refuses a member given twice.
	slices.SortFunc(r.Attrs, func(a, b Attr) int { return strings.Compare(a.Key, b.Key) })
	if _, ok := m["jws"]; ok {
		if r.Kind != KindCheckpoint {
			return nil, fmt.Errorf("%w: a jws on a %.32q record", ErrMalformed, r.Kind)
		}
		if r.JWS = str("jws"); bad {
			return nil, fmt.Errorf("%w: jws is not a string", ErrMalformed)
		}
	}
	return r, nil
}

func parseHash(s string) ([32]byte, error) {
	var h [32]byte
	if len(s) != 64 {
		return h, errors.New("not 64 hex digits")
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, err
	}
	if hex.EncodeToString(h[:]) != s {
		return h, errors.New("not lower-case hex")
	}
	return h, nil
}

// parseValue maps a JSON value to its attribute type: a string, an
// integer in its shortest form, true or false, or an array of strings.
// Anything else (null, an object, a fraction) is refused.
func parseValue(raw jsontext.Value) (Value, error) {
	switch raw.Kind() {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return Value{typ: typeString, s: s}, err
	case '0':
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != string(raw) {
			return Value{}, errors.New("not an integer in its shortest form")
		}
		return Value{typ: typeInt, n: n}, nil
	case 't':
		return Value{typ: typeBool, n: 1}, nil
	case 'f':
		return Value{typ: typeBool}, nil
	case '[':
		var items []jsontext.Value
		if err := json.Unmarshal(raw, &items); err != nil {
			return Value{}, err
		}
		list := make([]string, len(items))
		for i, it := range items {
			if it.Kind() != '"' {
				return Value{}, errors.New("a list item is not a string")
			}
			if err := json.Unmarshal(it, &list[i]); err != nil {
				return Value{}, err
			}
		}
		return Value{typ: typeStrings, list: list}, nil
	}
	return Value{}, fmt.Errorf("a %v is not an attribute value", raw.Kind())
}

// MarshalLogObject writes r's members through a zap encoder, so that a
// zap logger (Caddy's) writes the line MarshalLine would, inside its
// envelope: use zap.Inline(r).
func (r *Record) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	// One buffer for the three formatted members, not a string each: the
	// writer encodes every record in its flush.
	b := make([]byte, 0, 2*64+len(TimeLayout))
	b = hex.AppendEncode(b, r.Prev[:])
	b = hex.AppendEncode(b, r.Hash[:])
	b = r.Time.UTC().AppendFormat(b, TimeLayout)
	enc.AddString("instance", r.Instance)
	enc.AddString("run", r.Run)
	enc.AddUint64("seq", r.Seq)
	enc.AddByteString("prev", b[:64])
	enc.AddByteString("hash", b[64:128])
	enc.AddByteString("time", b[128:])
	enc.AddString("kind", string(r.Kind))
	if err := enc.AddObject("attrs", attrsObject(r.Attrs)); err != nil {
		return err
	}
	if r.JWS != "" {
		enc.AddString("jws", r.JWS)
	}
	return nil
}

type attrsObject []Attr

func (as attrsObject) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	for _, a := range as {
		switch v := a.Value; v.kind() {
		case typeInt:
			enc.AddInt64(a.Key, v.n)
		case typeBool:
			enc.AddBool(a.Key, v.n == 1)
		case typeStrings:
			if err := enc.AddArray(a.Key, stringsArray(v.list)); err != nil {
				return err
			}
		default:
			enc.AddString(a.Key, v.s)
		}
	}
	return nil
}

type stringsArray []string

func (ss stringsArray) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	for _, s := range ss {
		enc.AppendString(s)
	}
	return nil
}
