package audit

import (
	"fmt"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// batchMember is the one member of a batch line besides the envelope: the
// records, in chain order, each an object with a record line's members.
const batchMember = "records"

// MarshalBatchLine returns rs as one batch line, without a line break:
// {"records":[…]}, each record as MarshalLine writes it.
func MarshalBatchLine(rs []*Record) []byte {
	b := make([]byte, 0, 16+320*len(rs))
	b = append(b, `{"records":[`...)
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, MarshalLine(r)...)
	}
	return append(b, "]}"...)
}

// ParseRecords reads a line of either form (without its line break): a
// record line, one record, or a batch line, its records in order. It
// holds every record to ParseLine's rules, and a batch line to the same:
// member names exact and unique, only the envelope's besides records,
// records a non-empty array of objects with no envelope of their own. It
// does not check the hashes.
func ParseRecords(line []byte) ([]*Record, error) {
	recs, errs, _, err := lineRecords(line)
	if err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("record %d of the line: %w", i+1, err)
		}
	}
	return recs, nil
}

// lineRecords reads a line of either form. For a batch line it returns
// each record or, at the same index, why that object is not a record, so
// that a bad record is named at its place; err is for a line that is
// neither form.
func lineRecords(line []byte) (recs []*Record, errs []error, batch bool, err error) {
	var m map[string]jsontext.Value // v2: names exact, a name given twice refused
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, nil, false, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	raw, batch := m[batchMember]
	if !batch {
		r, err := parseRecord(m, true)
		if err != nil {
			return nil, nil, false, err
		}
		return []*Record{r}, []error{nil}, false, nil
	}
	// The message (msg, "audit records" from ZapSink) is the envelope's:
	// unprotected, so the reader does not look at it; the one spelling of
	// a batch line is in its members.
	for k := range m {
		if k != batchMember && !slices.Contains(Envelope, k) {
			return nil, nil, true, fmt.Errorf("%w: member %.32q in a batch line", ErrMalformed, k)
		}
	}
	var objs []jsontext.Value
	if raw.Kind() != '[' || json.Unmarshal(raw, &objs) != nil || len(objs) == 0 {
		return nil, nil, true, fmt.Errorf("%w: records is not a non-empty array", ErrMalformed)
	}
	recs, errs = make([]*Record, len(objs)), make([]error, len(objs))
	for i, o := range objs {
		var rm map[string]jsontext.Value
		if o.Kind() != '{' || json.Unmarshal(o, &rm) != nil {
			errs[i] = fmt.Errorf("%w: a batch line's record is not an object", ErrMalformed)
			continue
		}
		recs[i], errs[i] = parseRecord(rm, false)
	}
	return recs, errs, true, nil
}
