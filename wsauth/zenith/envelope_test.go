package zenith

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// scanAccepts are messages Scan takes, with what it must report; they
// seed FuzzScan too.
var scanAccepts = []struct {
	name string
	msg  string
	want Envelope
	data string
	txt  string
}{
	{
		name: "full",
		msg:  `{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","TransactionID":7,"Confirm":true,"Data":{"a":[1,2]}}`,
		want: Envelope{Controller: "Market", Topic: "Security!BHP.ASX", Action: "Sub", TransactionID: 7, Confirm: true,
			Present: HasController | HasTopic | HasAction | HasTransactionID | HasConfirm | HasData},
		data: `{"a":[1,2]}`, txt: "7",
	},
	{
		name: "defaults",
		msg:  `{"Topic":"Feeds"}`,
		want: Envelope{Controller: "Zenith", Topic: "Feeds", Action: "Publish", Present: HasTopic},
	},
	{
		name: "whitespace around and inside",
		msg:  " \t\r\n{ \"Controller\" : \"Auth\" ,\n\"Topic\":\"QueryIdentify\", \"TransactionID\" : -12 }\n ",
		want: Envelope{Controller: "Auth", Topic: "QueryIdentify", Action: "Publish", TransactionID: -12,
			Present: HasController | HasTopic | HasTransactionID},
		txt: "-12",
	},
	{
		name: "escapes in values are decoded",
		msg:  `{"Controller":"M\u0061rket","Topic":"Security!\u00c9X","Action":"Unsub"}`,
		want: Envelope{Controller: "Market", Topic: "Security!ÉX", Action: "Unsub", Present: HasController | HasTopic | HasAction},
	},
	{
		name: "other members are forwarded, escaped or not",
		msg:  `{"Topic":"Feeds","Extra":1,"Fo\u006f":{"Controller":"x"},"Controlle":2,"Controllers":3}`,
		want: Envelope{Controller: "Zenith", Topic: "Feeds", Action: "Publish", Present: HasTopic},
	},
	{
		name: "case variants inside Data are Data's business",
		msg:  `{"Topic":"PlaceOrder","Controller":"Trading","Data":{"controller":"Auth","Controller":"Auth"}}`,
		want: Envelope{Controller: "Trading", Topic: "PlaceOrder", Action: "Publish", Present: HasController | HasTopic | HasData},
		data: `{"controller":"Auth","Controller":"Auth"}`,
	},
	{
		name: "the least TransactionID, -(2^53 - 1)",
		msg:  `{"TransactionID":-9007199254740991,"Data":null}`,
		want: Envelope{Controller: "Zenith", Action: "Publish", TransactionID: -9007199254740991,
			Present: HasTransactionID | HasData},
		data: "null", txt: "-9007199254740991",
	},
	{
		name: "the greatest TransactionID, 2^53 - 1",
		msg:  `{"TransactionID":9007199254740991,"Confirm":false}`,
		want: Envelope{Controller: "Zenith", Action: "Publish", TransactionID: 9007199254740991,
			Present: HasTransactionID | HasConfirm},
		txt: "9007199254740991",
	},
	{
		name: "nesting 64 deep, with an escape (the decoder's path)",
		msg:  `{"Topic":"\u0058","Data":` + strings.Repeat("[", 63) + `"]]\"{"` + strings.Repeat("]", 63) + `}`,
		want: Envelope{Controller: "Zenith", Topic: "X", Action: "Publish", Present: HasTopic | HasData},
		data: strings.Repeat("[", 63) + `"]]\"{"` + strings.Repeat("]", 63),
	},
	{
		name: "duplicates elsewhere are the backend's business",
		msg:  `{"Topic":"Feeds","x":1,"x":2,"Data":{"Account":"a","Account":"b","Acc\u006funt":"c"}}`,
		want: Envelope{Controller: "Zenith", Topic: "Feeds", Action: "Publish", Present: HasTopic | HasData},
		data: `{"Account":"a","Account":"b","Acc\u006funt":"c"}`,
	},
	{
		name: "empty object",
		msg:  `{}`,
		want: Envelope{Controller: "Zenith", Action: "Publish"},
	},
	{
		name: "non-ASCII in Data and values",
		msg:  `{"Topic":"Watchlist!日本","Data":{"名前":"ſ"}}`,
		want: Envelope{Controller: "Zenith", Topic: "Watchlist!日本", Action: "Publish", Present: HasTopic | HasData},
		data: `{"名前":"ſ"}`,
	},
}

func TestScanAccepts(t *testing.T) {
	for _, tt := range scanAccepts {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Scan([]byte(tt.msg))
			if err != nil {
				t.Fatalf("Scan: %v", err)
			}
			if string(env.Data) != tt.data || string(env.TransactionIDText) != tt.txt {
				t.Errorf("Data %q TransactionIDText %q, want %q %q", env.Data, env.TransactionIDText, tt.data, tt.txt)
			}
			if (env.Data == nil) != (tt.want.Present&HasData == 0) {
				t.Errorf("Data nil = %v with Present %b", env.Data == nil, env.Present)
			}
			env.Data, env.TransactionIDText = nil, nil
			if !reflect.DeepEqual(env, tt.want) {
				t.Errorf("got  %+v\nwant %+v", env, tt.want)
			}
		})
	}
}

func TestScanDataAliasesMessage(t *testing.T) {
	msg := []byte(`{"Topic":"Depth!X","Data":{"k":"v"}}`)
	env, err := Scan(msg)
	if err != nil {
		t.Fatal(err)
	}
	if &env.Data[0] != &msg[26] || cap(env.Data) != len(env.Data) {
		t.Errorf("Data is not msg[26:35:35]: %q cap %d", env.Data, cap(env.Data))
	}
}

// scanRefusals are hostile messages, with the error and reason Scan must
// give: what is not one JSON object, and envelopes a lenient backend could
// read otherwise than the gateway (case, escaped or duplicate member
// names, values of the wrong type, TransactionIDs a double cannot hold,
// nesting deeper than a .NET backend reads). They seed FuzzScan too.
var scanRefusals = []struct {
	name   string
	msg    string
	err    error
	reason string
}{
	{"empty", ``, ErrMalformed, "truncated"},
	{"only whitespace", "  \n", ErrMalformed, "truncated"},
	{"not JSON", `Controller=Market`, ErrMalformed, "syntax error"},
	{"array", `[{"Controller":"Market"}]`, ErrMalformed, "not a JSON object"},
	{"string", `"Controller"`, ErrMalformed, "not a JSON object"},
	{"null", `null`, ErrMalformed, "not a JSON object"},
	{"truncated", `{"Controller":"Market"`, ErrMalformed, "truncated"},
	{"trailing bytes", `{"Controller":"Market"}x`, ErrMalformed, "syntax error"},
	{"trailing object", `{"Controller":"Market"}{"Controller":"Trading"}`, ErrMalformed, "data after the object"},
	{"trailing NUL", "{\"Controller\":\"Market\"}\x00", ErrMalformed, "syntax error"},
	{"byte order mark", "\ufeff{}", ErrMalformed, "syntax error"},
	{"comment", `{"Topic":"Feeds"/*x*/}`, ErrMalformed, "syntax error"},
	{"single quotes", `{'Topic':'Feeds'}`, ErrMalformed, "syntax error"},
	{"trailing comma", `{"Topic":"Feeds",}`, ErrMalformed, "syntax error"},
	{"lower-case controller", `{"controller":"Auth","Topic":"AuthToken"}`, ErrMalformed, "variant of an envelope member name"},
	{"upper-case controller next to Controller", `{"Controller":"Zenith","CONTROLLER":"Trading","Topic":"Feeds"}`, ErrMalformed, "variant of an envelope member name"},
	{"case variant of Topic", `{"Controller":"Market","Topic":"Markets","topic":"Depth"}`, ErrMalformed, "variant of an envelope member name"},
	{"case variant of Action", `{"Topic":"Depth","ACTION":"Sub"}`, ErrMalformed, "variant of an envelope member name"},
	{"TransactionId", `{"TransactionId":1}`, ErrMalformed, "variant of an envelope member name"},
	{"case variant of Data", `{"data":{}}`, ErrMalformed, "variant of an envelope member name"},
	{"case variant of Confirm", `{"confirm":true}`, ErrMalformed, "variant of an envelope member name"},
	{"underscore variant", `{"Control_ler":"Trading"}`, ErrMalformed, "variant of an envelope member name"},
	{"dash and space variant", `{"Transaction-ID ":1}`, ErrMalformed, "variant of an envelope member name"},
	{"escaped variant", `{"c\u006fntroller":"Trading"}`, ErrMalformed, "variant of an envelope member name"},
	{"escaped Controller", `{"Contr\u006fller":"Market","Topic":"Depth"}`, ErrMalformed, "envelope member name spelled with an escape"},
	{"escaped Controller after Controller", `{"Controller":"Market","Contr\u006fller":"Channel"}`, ErrMalformed, "envelope member name spelled with an escape"},
	{"escaped Topic", `{"\u0054opic":"Depth"}`, ErrMalformed, "envelope member name spelled with an escape"},
	{"duplicate Controller", `{"Controller":"Zenith","Controller":"Trading"}`, ErrMalformed, "duplicate envelope member"},
	{"duplicate Topic", `{"Topic":"Feeds","Topic":"Orders"}`, ErrMalformed, "duplicate envelope member"},
	{"duplicate Topic apart", `{"Topic":"Feeds","Data":{},"Controller":"Zenith","Topic":"Orders"}`, ErrMalformed, "duplicate envelope member"},
	{"duplicate Action", `{"Action":"Sub","Action":"Publish"}`, ErrMalformed, "duplicate envelope member"},
	{"duplicate TransactionID", `{"TransactionID":1,"TransactionID":1}`, ErrMalformed, "duplicate envelope member"},
	{"duplicate Confirm", `{"Confirm":true,"Confirm":true}`, ErrMalformed, "duplicate envelope member"},
	{"duplicate Data", `{"Data":{"Account":"a"},"Data":{"Account":"b"}}`, ErrMalformed, "duplicate envelope member"},
	{"non-ASCII name", `{"Controller":"Market","Contro\u0142ler":"x"}`, ErrMalformed, "member name not printable ASCII"},
	{"long s name", `{"TranſactionID":1}`, ErrMalformed, "member name not printable ASCII"},
	{"Kelvin sign name", "{\"Topic\":\"Feeds\",\"\u212aey\":1}", ErrMalformed, "member name not printable ASCII"},
	{"NUL in name", `{"Controller\u0000":"Trading"}`, ErrMalformed, "member name not printable ASCII"},
	{"raw tab in name", "{\"Con\ttroller\":\"Trading\"}", ErrMalformed, "syntax error"},
	{"escaped tab in name", `{"Controller\t":"Trading"}`, ErrMalformed, "member name not printable ASCII"},
	{"Controller null", `{"Controller":null,"Topic":"Feeds"}`, ErrMalformed, "Controller not a string"},
	{"Controller number", `{"Controller":1}`, ErrMalformed, "Controller not a string"},
	{"Topic object", `{"Topic":{"a":1}}`, ErrMalformed, "Topic not a string"},
	{"Action array", `{"Action":["Sub"]}`, ErrMalformed, "Action not a string"},
	{"Action lower case", `{"Action":"sub"}`, ErrMalformed, "unknown Action"},
	{"Action number", `{"Action":"1"}`, ErrMalformed, "unknown Action"},
	{"Action empty", `{"Action":""}`, ErrMalformed, "unknown Action"},
	{"TransactionID string", `{"TransactionID":"7"}`, ErrMalformed, "TransactionID not an integer in range"},
	{"TransactionID fraction", `{"TransactionID":7.0}`, ErrMalformed, "TransactionID not an integer in range"},
	{"TransactionID exponent", `{"TransactionID":7e0}`, ErrMalformed, "TransactionID not an integer in range"},
	{"TransactionID over int64", `{"TransactionID":9223372036854775808}`, ErrMalformed, "TransactionID not an integer in range"},
	{"TransactionID over 2^53 - 1", `{"TransactionID":9007199254740992}`, ErrMalformed, "TransactionID not an integer in range"},
	{"TransactionID under -(2^53 - 1)", `{"TransactionID":-9007199254740992}`, ErrMalformed, "TransactionID not an integer in range"},
	{"nested 65 deep", `{"Data":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`, ErrMalformed, "nested deeper than 64"},
	{"nested 65 deep with an escape", `{"Topic":"\u0058","Data":{"a":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}}`, ErrMalformed, "nested deeper than 64"},
	{"TransactionID under int64", `{"TransactionID":-9223372036854775809}`, ErrMalformed, "TransactionID not an integer in range"},
	{"TransactionID huge", `{"TransactionID":` + strings.Repeat("9", 400) + `}`, ErrMalformed, "TransactionID not an integer in range"},
	{"TransactionID huge exponent", `{"TransactionID":1e400}`, ErrMalformed, "TransactionID not an integer in range"},
	{"TransactionID null", `{"TransactionID":null}`, ErrMalformed, "TransactionID not an integer in range"},
	{"TransactionID leading zero", `{"TransactionID":07}`, ErrMalformed, "syntax error"},
	{"Confirm string", `{"Confirm":"true"}`, ErrMalformed, "Confirm not a boolean"},
	{"lone surrogate in Topic", `{"Topic":"\ud800"}`, ErrMalformed, "syntax error"},
	{"lone surrogate in Data", `{"Data":"\udfff"}`, ErrMalformed, "syntax error"},
	{"raw control character", "{\"Topic\":\"a\x01\"}", ErrMalformed, "syntax error"},
	{"deep nesting past the bound", `{"Data":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, ErrMalformed, "syntax error"},
	{"NaN", `{"Data":NaN}`, ErrMalformed, "syntax error"},
	{"invalid UTF-8 in a string", "{\"Topic\":\"\xff\"}", ErrInvalidUTF8, "invalid UTF-8"},
	{"invalid UTF-8 in a name", "{\"Con\xc0troller\":1}", ErrInvalidUTF8, "invalid UTF-8"},
	{"invalid UTF-8 after the object", "{}\xff", ErrInvalidUTF8, "invalid UTF-8"},
	{"surrogate encoded in UTF-8", "{\"Topic\":\"\xed\xa0\x80\"}", ErrInvalidUTF8, "invalid UTF-8"},
	{"overlong encoding", "{\"Topic\":\"\xc0\xaf\"}", ErrInvalidUTF8, "invalid UTF-8"},
	{"truncated rune", "{\"Topic\":\"\xe6\x97\"}", ErrInvalidUTF8, "invalid UTF-8"},
}

func TestScanRefuses(t *testing.T) {
	for _, tt := range scanRefusals {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Scan([]byte(tt.msg))
			if err == nil {
				t.Fatalf("accepted: %+v", env)
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			other := ErrInvalidUTF8
			if tt.err == ErrInvalidUTF8 {
				other = ErrMalformed
			}
			if errors.Is(err, other) {
				t.Errorf("error %v is also %v", err, other)
			}
			se, ok := errors.AsType[*ScanError](err)
			if !ok {
				t.Fatalf("error %T is not a *ScanError", err)
			}
			if se.Reason != tt.reason {
				t.Errorf("reason %q, want %q", se.Reason, tt.reason)
			}
			if se.Offset < 0 || se.Offset > int64(len(tt.msg)) {
				t.Errorf("offset %d outside the message", se.Offset)
			}
			if env.Present != 0 || env.Controller != "" || env.Data != nil {
				t.Errorf("refused message gave an envelope: %+v", env)
			}
		})
	}
}

// TestScanMemoryBound: Scan holds no more than the message, whatever the
// message holds: hostile 1 MiB messages cost a few kilobytes of
// allocation, not a multiple of the message (a decoder tracking every name
// for duplicates allocates 16 MB for the first one).
func TestScanMemoryBound(t *testing.T) {
	names := func(prefix string) string {
		var b strings.Builder
		b.WriteString(prefix)
		for i := 0; b.Len() < 1<<20; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%x":0`, i)
		}
		return b.String() + strings.Repeat("}", strings.Count(prefix, "{"))
	}
	tests := map[string]string{
		"many names in Data":   names(`{"Topic":"x","Data":{`),
		"many top-level names": names(`{`),
		"deep nesting":         `{"Data":[` + strings.Repeat(strings.Repeat(`{"a":`, MaxDepth-2)+"1"+strings.Repeat("}", MaxDepth-2)+",", 2800) + `1]}`,
		"escapes":              `{"Topic":"` + strings.Repeat(`\u00e9`, 170_000) + `"}`,
	}
	for name, msg := range tests {
		t.Run(name, func(t *testing.T) {
			b := []byte(msg)
			if _, err := Scan(b); err != nil {
				t.Fatal(err)
			}
			const runs = 5
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range runs {
				if _, err := Scan(b); err != nil {
					t.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			perScan := (after.TotalAlloc - before.TotalAlloc) / runs
			// The Topic of "escapes" is decoded (340 KB, from 1 MB of JSON
			// text decoded in a scratch buffer as long).
			limit := uint64(64 << 10)
			if name == "escapes" {
				limit += 340_000 + 1_020_002
			}
			if perScan > limit {
				t.Errorf("Scan of %d bytes allocates %d bytes, over %d", len(b), perScan, limit)
			}
		})
	}
}
