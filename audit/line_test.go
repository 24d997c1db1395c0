package audit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/audit"
)

// TestParseLineRefusesSecondSpellings: each line below is a good line
// changed into a second spelling of a field (or no record at all), and is
// refused. It failed when: a hash was not held to lower case (upper case
// passed as the same record); integers were not held to their shortest
// form (-0 passed as 0).
func TestParseLineRefusesSecondSpellings(t *testing.T) {
	l := buildLog(t, 5, 1, 1, false)
	good := string(l.files[0].lines[2])
	r := mustParse(t, []byte(good))
	hash := strings.Split(strings.Split(good, `"hash":"`)[1], `"`)[0]
	seq := strings.Split(strings.Split(good, `"seq":`)[1], `,`)[0]
	for _, tc := range []struct{ name, line string }{
		{"hash in upper case", strings.Replace(good, hash, strings.ToUpper(hash), 1)},
		{"short hash", strings.Replace(good, hash, hash[:62], 1)},
		{"seq with a leading zero", strings.Replace(good, `"seq":`+seq, `"seq":0`+seq, 1)},
		{"seq as a fraction", strings.Replace(good, `"seq":`+seq, `"seq":`+seq+`.0`, 1)},
		{"seq as a string", strings.Replace(good, `"seq":`+seq, `"seq":"`+seq+`"`, 1)},
		{"time without nanoseconds", strings.Replace(good, ".123456789Z", "Z", 1)},
		{"time in another zone", strings.Replace(good, "Z\"", "+00:00\"", 1)},
		{"member name in another case", strings.Replace(good, `"kind"`, `"Kind"`, 1)},
		{"member given twice", strings.Replace(good, `"kind":`, `"kind":"lapse","kind":`, 1)},
		{"member missing", strings.Replace(good, `"run":"`+r.Run+`",`, "", 1)},
		{"unknown member", strings.Replace(good, `{"instance"`, `{"note":"x","instance"`, 1)},
		{"attribute null", strings.Replace(good, `"attrs":{`, `"attrs":{"x":null,`, 1)},
		{"attribute a fraction", strings.Replace(good, `"attrs":{`, `"attrs":{"x":1.5,`, 1)},
		{"attribute an object", strings.Replace(good, `"attrs":{`, `"attrs":{"x":{},`, 1)},
		{"attribute a list with a number", strings.Replace(good, `"attrs":{`, `"attrs":{"x":["a",1],`, 1)},
		{"attribute integer minus zero", strings.Replace(good, `"attrs":{`, `"attrs":{"x":-0,`, 1)},
		{"attribute integer with plus", strings.Replace(good, `"attrs":{`, `"attrs":{"x":+1,`, 1)},
		{"attribute key twice", strings.Replace(good, `"attrs":{`, `"attrs":{"x":1,"x":2,`, 1)},
		{"jws on a non-checkpoint", strings.Replace(good, `}}`, `},"jws":"a.b.c"}`, 1)},
		{"invalid UTF-8", strings.Replace(good, r.Instance, r.Instance+"\xff", 1)},
		{"two values", good + " {}"},
		{"empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.line == good {
				t.Fatal("the edit did not apply")
			}
			if _, err := audit.ParseLine([]byte(tc.line)); !errors.Is(err, audit.ErrMalformed) {
				t.Fatalf("ParseLine = %v, want ErrMalformed: %s", err, tc.line)
			}
		})
	}
	if _, err := audit.ParseLine([]byte(`{"level":"info","ts":1,"logger":"audit","msg":"audit record",` + good[1:])); err != nil {
		t.Fatalf("a line in a zap envelope: %v", err)
	}
}

// TestParseRecordsBatchLines: a batch line's records come back in order,
// in LineSink's spelling and in a zap envelope, and a batch line is held
// to one spelling as a record line is: records the one member besides the
// envelope, given once, a non-empty array of objects with a record's
// members and no envelope of their own; a record line is not read as a
// batch. It failed when: a record object inside a batch line was read
// with the envelope allowed ("a record with an envelope member" passed).
func TestParseRecordsBatchLines(t *testing.T) {
	l := buildLog(t, 5, 1, 1, false)
	a, b := string(l.files[0].lines[1]), string(l.files[0].lines[2])
	ra, rb := mustParse(t, []byte(a)), mustParse(t, []byte(b))
	good := `{"records":[` + a + `,` + b + `]}`
	if got := string(audit.MarshalBatchLine([]*audit.Record{ra, rb})); got != good {
		t.Fatalf("MarshalBatchLine = %s", got)
	}
	for _, line := range []string{good, `{"level":"info","ts":1,"logger":"audit","msg":"audit records",` + good[1:]} {
		rs, err := audit.ParseRecords([]byte(line))
		if err != nil || len(rs) != 2 || rs[0].Hash != ra.Hash || rs[1].Hash != rb.Hash {
			t.Fatalf("ParseRecords = %v, %v", rs, err)
		}
	}
	if rs, err := audit.ParseRecords([]byte(a)); err != nil || len(rs) != 1 || rs[0].Hash != ra.Hash {
		t.Fatalf("a record line: %v, %v", rs, err)
	}
	if _, err := audit.ParseLine([]byte(good)); !errors.Is(err, audit.ErrMalformed) {
		t.Fatalf("ParseLine read a batch line: %v", err)
	}
	for _, tc := range []struct{ name, line string }{
		{"records empty", `{"records":[]}`},
		{"records an object", `{"records":` + a + `}`},
		{"records null", `{"records":null}`},
		{"records given twice", `{"records":[` + a + `],` + good[1:]},
		{"records in another case", strings.Replace(good, `"records"`, `"Records"`, 1)},
		{"a record member beside records", strings.Replace(good, `{"records"`, `{"kind":"query","records"`, 1)},
		{"an unknown member beside records", strings.Replace(good, `{"records"`, `{"note":"x","records"`, 1)},
		{"a record that is a string", strings.Replace(good, `[`, `["x",`, 1)},
		{"a record with an envelope member", strings.Replace(good, `[{"instance"`, `[{"level":"info","instance"`, 1)},
		{"a record with an unknown member", strings.Replace(good, `[{"instance"`, `[{"note":"x","instance"`, 1)},
		{"a record with a member missing", strings.Replace(good, `"run":"`+ra.Run+`",`, "", 1)},
		{"a record's hash a digit too long", strings.Replace(good, `"hash":"`, `"hash":"a`, 1)},
		{"a batch line cut short", good[:len(good)-2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.line == good {
				t.Fatal("the edit did not apply")
			}
			if _, err := audit.ParseRecords([]byte(tc.line)); !errors.Is(err, audit.ErrMalformed) {
				t.Fatalf("ParseRecords = %v, want ErrMalformed: %s", err, tc.line)
			}
		})
	}
}
