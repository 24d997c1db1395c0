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
