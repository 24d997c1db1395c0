package zenith

import (
	"strings"
	"testing"
	"unsafe"
)

// TestScanFast: scanFast takes the common message and gives what the
// decoder does; whatever else (escapes, non-ASCII, bad grammar, deep
// nesting, refusals) it leaves to the decoder.
func TestScanFast(t *testing.T) {
	takes := []string{
		`{}`,
		` {"Controller":"Market","Topic":"Depth!BHP.ASX","Action":"Sub","TransactionID":-12,"Confirm":true,"Data":{"a":[1,-0.5,2e10,3E-2,0,-0,1.25e+3,true,false,null,"",{}],"b":[]}} `,
		"{\t\"Topic\" :\r\n\"x\" , \"Other\":\"\x7f~ \",\"Data\":\"" + strings.Repeat("0123456789abcdef", 9) + "\"}",
		`{"Data":{"Data":1,"Data":2},"Controllers":1,"x":1,"x":2}`,
		`{"TransactionID":9007199254740991,"Confirm":false}`,
		`{"TransactionID":-9007199254740991}`,
		`{"Data":` + strings.Repeat("[", fastDepth-1) + strings.Repeat("]", fastDepth-1) + `}`,
	}
	leaves := []string{
		``, ` `, `[]`, `"x"`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":[1,]}`, `{,"a":1}`, `{"a":1}x`, `{"a":1}{}`,
		`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":1e+}`, `{"a":+1}`, `{"a":tru}`, `{"a":nul}`, `{"a":truex}`,
		`{"a":"\n"}`, `{"a":"` + "\x01" + `"}`, `{"a":"\u0041"}`, `{"a":"é"}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}",
		`{"Controller":1}`, `{"Action":"Get"}`, `{"TransactionID":1.5}`, `{"TransactionID":9223372036854775808}`, `{"TransactionID":9007199254740992}`, `{"Confirm":"yes"}`,
		`{"Topic":"a","Topic":"b"}`, `{"topic":"x"}`, `{"Con_troller":"x"}`, `{"Contr\u006fller":"x"}`, "{\"a\x7f\":1}",
		`{"Data":` + strings.Repeat("[", fastDepth) + strings.Repeat("]", fastDepth) + `}`,
		`{"a":"unterminated`, `{"a":"0123456789abcdef0123`,
	}
	for _, m := range takes {
		if _, ok := scanFast([]byte(m), nil); !ok {
			t.Errorf("scanFast left %q", m)
		}
		checkScanFast(t, []byte(m))
	}
	for _, m := range leaves {
		if env, ok := scanFast([]byte(m), nil); ok {
			t.Errorf("scanFast took %q: %+v", m, env)
		}
		checkScanFast(t, []byte(m))
	}
	// Every special byte at every offset of a string read byte by byte,
	// or sixteen at a time after its first sixteen.
	for _, c := range []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xc3} {
		for _, n := range []int{20, 70} {
			for i := range n {
				s := []byte(strings.Repeat("a", n))
				s[i] = c
				m := []byte(`{"Data":"` + string(s) + `"}`)
				checkScanFast(t, m)
			}
		}
	}
}

// TestScanReusesTopic: ScanReusing with a topic holder gives a Topic equal to
// the one held as that very string, and holds each new one.
func TestScanReusesTopic(t *testing.T) {
	var held string
	read := func(msg string) string {
		t.Helper()
		env, err := ScanReusing([]byte(msg), &held)
		if err != nil {
			t.Fatal(err)
		}
		return env.Topic
	}
	a := read(`{"Controller":"Market","Topic":"Depth!BHP.ASX"}`)
	b := read(`{"Controller":"Market","Topic":"Depth!BHP.ASX","Data":1}`)
	if a != "Depth!BHP.ASX" || b != a || unsafe.StringData(a) != unsafe.StringData(b) || held != a {
		t.Fatalf("topics %q %q, held %q: not the one string", a, b, held)
	}
	if c := read(`{"Topic":"Depth!CBA.ASX"}`); c != "Depth!CBA.ASX" || held != c {
		t.Fatalf("topic %q, held %q", c, held)
	}
	if d := read(`{"Topic":"Dep\u0074h!CBA.ASX"}`); d != "Depth!CBA.ASX" {
		t.Fatalf("escaped topic %q", d) // the decoder's, not held
	}
	msg := []byte(`{"Controller":"Market","Topic":"Depth!CBA.ASX"}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = ScanReusing(msg, &held) }); n != 0 {
		t.Fatalf("%v allocations for a topic held", n)
	}
}
